// One view per probe kind (what its part of a report shows: charts, tables, notes), for the
// terminal text, Markdown and HTML reports alike (the CSV is data and reads the results).
// The mapped type makes a missing probe a compile error.
import type { ProbeKind } from '../../../contracts/probes/index.js';
import type { ResultOf } from '../../../contracts/result.js';
import type { ReportSection } from '../document.js';
import { compressionView } from './compression.js';
import { corsView } from './cors.js';
import { dnsView } from './dns.js';
import { drainView } from './drain.js';
import { http2View } from './http2.js';
import { loadView } from './load.js';
import { reuseView } from './reuse.js';
import { tlsView } from './tls.js';

export const REPORT_VIEWS: { [K in ProbeKind]: (results: ResultOf<K>[]) => ReportSection } = {
  reuse: reuseView,
  compression: compressionView,
  cors: corsView,
  drain: drainView,
  tls: tlsView,
  http2: http2View,
  load: loadView,
  dns: dnsView,
};
