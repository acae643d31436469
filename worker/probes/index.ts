// Every probe kind's implementation; the mapped type makes a missing one a compile error.
import type { ProbeKind } from '../../contracts/probes/index.js';
import { loadProbe } from './load.js';
import type { Probe } from './probe.js';
import { reuseProbe } from './reuse.js';

export const PROBE_IMPLEMENTATIONS: { [K in ProbeKind]: Probe<K> } = {
  reuse: reuseProbe,
  load: loadProbe,
};
