// Every probe kind's implementation; the mapped type makes a missing one a compile error.
import type { ProbeKind } from '../../contracts/probes/index.js';
import { runCompressionProbe } from './compression.js';
import { runCorsProbe } from './cors.js';
import { runDrainProbe } from './drain.js';
import { runHttp2Probe } from './http2.js';
import { runLoadProbe } from './load.js';
import type { Probe } from './probe.js';
import { runReuseProbe } from './reuse.js';
import { runTlsProbe } from './tls.js';

export const PROBE_IMPLEMENTATIONS: { [K in ProbeKind]: Probe<K> } = {
  reuse: runReuseProbe,
  compression: runCompressionProbe,
  cors: runCorsProbe,
  drain: runDrainProbe,
  tls: runTlsProbe,
  http2: runHttp2Probe,
  load: runLoadProbe,
};
