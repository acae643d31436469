// One report section per probe kind; the mapped type makes a missing one a compile error.
import type { ProbeKind } from '../../../contracts/probes/index.js';
import type { ResultOf } from '../../../contracts/result.js';
import { compressionSection } from './compression.js';
import { corsSection } from './cors.js';
import { drainSection } from './drain.js';
import { http2Section } from './http2.js';
import { loadSection } from './load.js';
import { reuseSection } from './reuse.js';
import { tlsSection } from './tls.js';

export const REPORT_SECTIONS: { [K in ProbeKind]: (results: ResultOf<K>[]) => string } = {
  reuse: reuseSection,
  compression: compressionSection,
  cors: corsSection,
  drain: drainSection,
  tls: tlsSection,
  http2: http2Section,
  load: loadSection,
};
