// A comparison of two runs (`probefleet.compare/v1`): per region, target, probe and variant,
// each headline quantity before and after, the change with its 95% interval and a verdict;
// findings that appeared or disappeared; what the two plans do not share. Written by
// `probefleet compare --json` and stored by the coordinator beside each run's report.
// docs/compare.md documents the fields and the verdict rule.
import { z } from 'zod';
import { nameSchema, PHASES, type Phase } from './common.js';
import { findingSchema } from './findings.js';
import { runIdSchema } from './job.js';
import { ACCEPT_ENCODINGS, type AcceptEncoding } from './probes/compression.js';
import { PROBE_KINDS } from './probes/index.js';

export const COMPARISON_SCHEMA = 'probefleet.compare/v1';

/** `regressed` and `improved` need a change outside the noise and at least the quantity's minimum. */
export const VERDICTS = ['regressed', 'improved', 'unchanged'] as const;
export type Verdict = (typeof VERDICTS)[number];

export const QUANTITY_UNITS = ['ms', 'bytes', 'share', 'per_second'] as const;
export type QuantityUnit = (typeof QUANTITY_UNITS)[number];

/**
 * Which way is worse. `side-that-moved`: the new-connection cost is median(new) − median(reused),
 * so it falls both when new connections get cheaper and when reused requests get slower; its
 * change is judged by whichever of the two medians moved more.
 */
export type Better = 'lower' | 'higher' | 'side-that-moved';

export interface QuantitySpec {
  /** In tables: "total p50", "handshake resumed p95". */
  label: string;
  unit: QuantityUnit;
  better: Better;
}

type Percentile = 'p50' | 'p95';
type PhaseQuantity = `phase_${Phase}_${Percentile}`;
type HandshakeQuantity = `handshake_${'full' | 'resumed'}_${Percentile}`;
export type HeaderBytesKind = 'h1' | 'h2_first' | 'h2_repeat';
type HeaderBytesQuantity = `header_bytes_${HeaderBytesKind}_${'request' | 'response'}`;
type EncodedBytesQuantity = `encoded_bytes_${AcceptEncoding}`;
export type QuantityId =
  | 'new_connection_cost'
  | PhaseQuantity
  | HandshakeQuantity
  | HeaderBytesQuantity
  | EncodedBytesQuantity
  | 'connections_per_request'
  | 'error_rate'
  | 'load_throughput'
  | 'load_latency_p50'
  | 'load_latency_p99';

const time = (label: string): QuantitySpec => ({ label, unit: 'ms', better: 'lower' });
const bytes = (label: string): QuantitySpec => ({ label, unit: 'bytes', better: 'lower' });
const PERCENTILES: Percentile[] = ['p50', 'p95'];
const HEADER_BYTES_LABEL: Record<HeaderBytesKind, string> = {
  h1: 'HTTP/1.1',
  h2_first: 'HTTP/2 first',
  h2_repeat: 'HTTP/2 repeat',
};

/** Every quantity a comparison can hold: the metric label `quantity` takes these ids. */
export const QUANTITIES = {
  new_connection_cost: { label: 'new-connection cost', unit: 'ms', better: 'side-that-moved' },
  ...Object.fromEntries(
    PHASES.flatMap((phase) => PERCENTILES.map((p) => [`phase_${phase}_${p}`, time(`${phase} ${p}`)])),
  ),
  ...Object.fromEntries(
    (['full', 'resumed'] as const).flatMap((kind) =>
      PERCENTILES.map((p) => [`handshake_${kind}_${p}`, time(`handshake ${kind} ${p}`)]),
    ),
  ),
  ...Object.fromEntries(
    (Object.keys(HEADER_BYTES_LABEL) as HeaderBytesKind[]).flatMap((kind) =>
      (['request', 'response'] as const).map((message) => [
        `header_bytes_${kind}_${message}`,
        bytes(`${HEADER_BYTES_LABEL[kind]} ${message} header bytes`),
      ]),
    ),
  ),
  ...Object.fromEntries(
    ACCEPT_ENCODINGS.map((encoding) => [`encoded_bytes_${encoding}`, bytes(`body bytes, Accept-Encoding ${encoding}`)]),
  ),
  connections_per_request: { label: 'connections per request', unit: 'share', better: 'lower' },
  error_rate: { label: 'error rate', unit: 'share', better: 'lower' },
  load_throughput: { label: 'throughput', unit: 'per_second', better: 'higher' },
  load_latency_p50: time('latency p50'),
  load_latency_p99: time('latency p99'),
} as Record<QuantityId, QuantitySpec>;
export const QUANTITY_IDS = Object.keys(QUANTITIES) as [QuantityId, ...QuantityId[]];

/** How the 95% interval of a change was found. `none`: a value measured once per run, or exactly
 * (bytes): the verdict rests on the minimum change alone. */
export const INTERVAL_METHODS = ['bootstrap', 'newcombe', 'order-statistics', 'none'] as const;

/** Why the verdict: `material` (outside the noise and at least the minimum change),
 * `within-noise` (the interval includes no change), `below-minimum` (real, but smaller than the minimum). */
export const VERDICT_REASONS = ['material', 'within-noise', 'below-minimum'] as const;

const variantSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

export const comparedQuantitySchema = z.strictObject({
  region: nameSchema,
  target: nameSchema,
  probe: z.enum(PROBE_KINDS),
  variant: variantSchema,
  quantity: z.enum(QUANTITY_IDS),
  /** In the quantity's unit: milliseconds, bytes, a share (0..1) or requests per second. */
  before: z.number(),
  after: z.number(),
  /** What each value is over (samples, requests, handshakes); null for a single value. */
  n: z.strictObject({ before: z.int().nonnegative(), after: z.int().nonnegative() }).nullable(),
  /** after − before. */
  change: z.number(),
  /** change / |before|; null when before is 0. */
  relativeChange: z.number().nullable(),
  /** 95% interval of the change; null when the interval method is `none`. */
  ci95: z.tuple([z.number(), z.number()]).nullable(),
  interval: z.enum(INTERVAL_METHODS),
  /** The smallest change that counts, in the quantity's unit, for this `before`. */
  minChange: z.number().nonnegative(),
  verdict: z.enum(VERDICTS),
  reason: z.enum(VERDICT_REASONS),
});
export type ComparedQuantity = z.infer<typeof comparedQuantitySchema>;

export const findingChangeSchema = findingSchema.extend({ change: z.enum(['appeared', 'disappeared']) });
export type FindingChange = z.infer<typeof findingChangeSchema>;

/** What the two runs do not share. `before`/`after` say what each run has there (null: nothing). */
export const DIFFERENCE_KINDS = [
  'plan',
  'mode',
  'region',
  'target',
  'target-url',
  'target-settings',
  'experiment',
  'parameters',
] as const;
export const differenceSchema = z.strictObject({
  kind: z.enum(DIFFERENCE_KINDS),
  /** The region, target, or "target probe" the difference is about. */
  where: z.string(),
  before: z.string().nullable(),
  after: z.string().nullable(),
});
export type Difference = z.infer<typeof differenceSchema>;

/** A job, or one quantity of a job, that one run has and the other does not. */
export const notComparedSchema = z.strictObject({
  region: nameSchema,
  target: nameSchema,
  probe: z.enum(PROBE_KINDS),
  variant: variantSchema,
  /** Absent: the whole job. */
  quantity: z.enum(QUANTITY_IDS).optional(),
  reason: z.string(),
});
export type NotCompared = z.infer<typeof notComparedSchema>;

export const comparedRunSchema = z.strictObject({
  runId: runIdSchema,
  plan: nameSchema,
  mode: z.enum(['embedded', 'distributed']),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime(),
  /** Regions with results. */
  regions: z.array(nameSchema),
  /** Where it was read from: a file name, or "redis". */
  source: z.string(),
});
export type ComparedRun = z.infer<typeof comparedRunSchema>;

export const comparisonSchema = z.strictObject({
  schema: z.literal(COMPARISON_SCHEMA),
  before: comparedRunSchema,
  after: comparedRunSchema,
  method: z.strictObject({
    confidence: z.literal(0.95),
    /** Bootstrap resamples and the PRNG seed: the same two runs always give the same intervals. */
    resamples: z.int().positive(),
    seed: z.int(),
  }),
  summary: z.strictObject({
    regressed: z.int().nonnegative(),
    improved: z.int().nonnegative(),
    unchanged: z.int().nonnegative(),
    findingsAppeared: z.int().nonnegative(),
    findingsDisappeared: z.int().nonnegative(),
  }),
  quantities: z.array(comparedQuantitySchema),
  findings: z.array(findingChangeSchema),
  differences: z.array(differenceSchema),
  notCompared: z.array(notComparedSchema),
});
export type RunComparison = z.infer<typeof comparisonSchema>;
