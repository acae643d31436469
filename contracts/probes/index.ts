// The one list of probe kinds. A new probe is a contract here, an implementation, its finding
// rules, a report view and its tests, plus an entry in each registry: docs/adding-a-probe.md
// walks them. The compiler points at each registry that lacks the new kind;
// test/unit/probe-kinds.test.ts at every other place a probe must appear.
import { z } from 'zod';
import type { RequestSample } from '../common.js';
import type { ShardSpec } from './define.js';
import { compressionProbe } from './compression.js';
import { corsProbe } from './cors.js';
import { dnsProbe } from './dns.js';
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
  dns: dnsProbe,
} as const;

export type ProbeKind = keyof typeof PROBES;
export const PROBE_KINDS = Object.keys(PROBES) as [ProbeKind, ...ProbeKind[]];

type Contract<K extends ProbeKind> = (typeof PROBES)[K];
export type ProbeParams<K extends ProbeKind> = import('zod').output<Contract<K>['params']>;
export type ProbeVariant<K extends ProbeKind> = import('zod').output<Contract<K>['variant']>;
export type ProbeDetails<K extends ProbeKind> = import('zod').output<Contract<K>['details']>;

/** Probes whose `details.samples` hold one RequestSample per HTTP request. Their request metrics,
 * compare's phase measures and the check for retransmitted connects follow from those samples:
 * the registries for these (PROBE_METRICS, PROBE_METRIC_MAPPINGS, MEASURES, SAMPLE_GROUPS) need
 * an entry only where a probe has more to say. */
export type RequestSampleProbe = {
  [K in ProbeKind]: ProbeDetails<K> extends { samples: readonly RequestSample[] } ? K : never;
}[ProbeKind];
/** Probes with anything else (or nothing) as samples: each registry must have their entry. */
export type OtherProbe = Exclude<ProbeKind, RequestSampleProbe>;

/** The modes of a probe whose variant has a `mode` (reused, new, unread, ...): its series carry
 * the label. None for the others. */
export function modesOf(kind: ProbeKind): readonly string[] {
  const mode = (PROBES[kind].variant.shape as Record<string, unknown>).mode;
  return mode instanceof z.ZodEnum ? (mode.options as string[]) : [];
}

/** Whether the probe connects to the target's address (every probe but dns, which sends to its
 * resolvers): its connections resolve the target's name as the target's settings say. */
export function sendsToTarget(kind: ProbeKind): boolean {
  return (PROBES[kind] as { sendsToTarget?: boolean }).sendsToTarget !== false;
}

/** How the probe's jobs are spread over several workers (the load probe's `workers`), or
 * undefined for a probe whose jobs never are. */
export function shardSpecOf(kind: ProbeKind): ShardSpec<unknown> | undefined {
  return (PROBES[kind] as { shards?: ShardSpec<never> }).shards as ShardSpec<unknown> | undefined;
}
