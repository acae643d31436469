// The one list of probe kinds. Adding a probe touches about a dozen files (a contract here, an
// implementation, a report view, metrics, findings, an example plan, a dashboard panel, docs and
// tests): docs/adding-a-probe.md walks them. The compiler points at each registry that lacks the
// new kind; test/unit/probe-kinds.test.ts at the docs section, example, panel and lab test.
import { compressionProbe } from './compression.js';
import { corsProbe } from './cors.js';
import { drainProbe } from './drain.js';
import { http2Probe } from './http2.js';
import { loadProbe } from './load.js';
import { reuseProbe } from './reuse.js';
import { tlsProbe } from './tls.js';

export const PROBES = {
  reuse: reuseProbe,
  compression: compressionProbe,
  cors: corsProbe,
  drain: drainProbe,
  tls: tlsProbe,
  http2: http2Probe,
  load: loadProbe,
} as const;

export type ProbeKind = keyof typeof PROBES;
export const PROBE_KINDS = Object.keys(PROBES) as [ProbeKind, ...ProbeKind[]];

type Contract<K extends ProbeKind> = (typeof PROBES)[K];
export type ProbeParams<K extends ProbeKind> = import('zod').output<Contract<K>['params']>;
export type ProbeVariant<K extends ProbeKind> = import('zod').output<Contract<K>['variant']>;
export type ProbeDetails<K extends ProbeKind> = import('zod').output<Contract<K>['details']>;
