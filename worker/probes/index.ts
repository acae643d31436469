// Every probe kind's implementation; the mapped type makes a missing one a compile error.
import type { ProbeKind } from '../../contracts/probes/index.js';
import type { Probe } from './probe.js';
import { runReuseProbe } from './reuse.js';

/**
 * A probe whose module is loaded on its first job, before the probe starts timing: a worker
 * holds only the code (and libraries: pako, hdr-histogram-js) of the kinds it runs, ~10 MB less
 * at start-up (bench/README.md, worker memory).
 */
function loadedOnFirstJob<K extends ProbeKind>(load: () => Promise<Probe<K>>): Probe<K> {
  let loading: Promise<Probe<K>> | undefined;
  return async (job, ctx) => {
    loading ??= load();
    return (await loading)(job, ctx);
  };
}

export const PROBE_IMPLEMENTATIONS: { [K in ProbeKind]: Probe<K> } = {
  // Loaded at start: the warm-up runs it (worker/warm-up.ts).
  reuse: runReuseProbe,
  compression: loadedOnFirstJob(async () => (await import('./compression.js')).runCompressionProbe),
  cors: loadedOnFirstJob(async () => (await import('./cors.js')).runCorsProbe),
  drain: loadedOnFirstJob(async () => (await import('./drain.js')).runDrainProbe),
  tls: loadedOnFirstJob(async () => (await import('./tls.js')).runTlsProbe),
  http2: loadedOnFirstJob(async () => (await import('./http2.js')).runHttp2Probe),
  load: loadedOnFirstJob(async () => (await import('./load.js')).runLoadProbe),
  dns: loadedOnFirstJob(async () => (await import('./dns.js')).runDnsProbe),
};
