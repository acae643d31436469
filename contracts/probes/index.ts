// The one list of probe kinds. Adding a probe: a contract file here, an implementation in
// worker/probes/, and an entry in both lists; the compiler points at anything missed.
import { loadProbe } from './load.js';
import { reuseProbe } from './reuse.js';

export const PROBES = {
  reuse: reuseProbe,
  load: loadProbe,
} as const;

export type ProbeKind = keyof typeof PROBES;
export const PROBE_KINDS = Object.keys(PROBES) as [ProbeKind, ...ProbeKind[]];

type Contract<K extends ProbeKind> = (typeof PROBES)[K];
export type ProbeParams<K extends ProbeKind> = import('zod').output<Contract<K>['params']>;
export type ProbeVariant<K extends ProbeKind> = import('zod').output<Contract<K>['variant']>;
export type ProbeDetails<K extends ProbeKind> = import('zod').output<Contract<K>['details']>;
