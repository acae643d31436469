// Every probe kind's implementation; the mapped type makes a missing one a compile error.
import type { ProbeKind } from '../../contracts/probes/index.js';
import { compressionProbe } from './compression.js';
import { corsProbe } from './cors.js';
import { drainProbe } from './drain.js';
import { http2Probe } from './http2.js';
import { loadProbe } from './load.js';
import type { Probe } from './probe.js';
import { reuseProbe } from './reuse.js';
import { tlsProbe } from './tls.js';

export const PROBE_IMPLEMENTATIONS: { [K in ProbeKind]: Probe<K> } = {
  reuse: reuseProbe,
  compression: compressionProbe,
  cors: corsProbe,
  drain: drainProbe,
  tls: tlsProbe,
  http2: http2Probe,
  load: loadProbe,
};
