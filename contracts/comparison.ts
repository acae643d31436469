// A comparison of a run with its baseline, the plan's earlier runs (`probefleet.compare/v3`): per
// region, target, probe and variant, each headline quantity's baseline (the earlier runs' values,
// their median and night-to-night spread), the new run's value with its own 95% interval, and a
// verdict with its reason; findings that appeared or disappeared since the newest earlier run;
// what the plans do not share. Written by `probefleet compare --json` and stored by the
// coordinator beside each run's report. docs/compare.md documents the fields and the rule.
import { z } from 'zod';
import { nameSchema } from './common.js';
import { findingSchema } from './findings.js';
import { runIdSchema } from './job.js';
import { PROBE_KINDS } from './probes/index.js';
import { QUANTITY_IDS } from './quantities.js';

export const COMPARISON_SCHEMA = 'probefleet.compare/v3';

/** A new run of at most this many jobs has everything listed; a bigger one lists only the
 * quantities that regressed or improved (the LISTED.changed largest changes) and the first
 * LISTED.notCompared of what was not compared; `omitted` counts the rest. */
export const LISTED_EVERY_QUANTITY_UP_TO_JOBS = 10_000;
export const LISTED = { changed: 10_000, notCompared: 1_000 } as const;

/** `regressed` and `improved` need a value beyond the baseline's spread and a change of at least the quantity's minimum. */
export const VERDICTS = ['regressed', 'improved', 'unchanged'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** How the new run's own 95% interval was found. `none`: a value measured once per run, or exactly
 * (bytes): the verdict rests on the value itself. */
export const INTERVAL_METHODS = ['bootstrap', 'wilson', 'order-statistics', 'none'] as const;

/**
 * Why the verdict: `beyond-baseline` (outside the earlier runs' spread and at least the minimum
 * effect), `within-spread` (inside what the earlier runs, or the run's own interval, reach),
 * `below-minimum` (outside the spread, but smaller than the minimum effect), `too-little-history`
 * (fewer earlier runs than the rule needs), `beyond-any-noise` (too little history, but the
 * value at least doubled or halved, and by at least 5 times the absolute minimum),
 * `machine-busy` (a change of a time no larger than the worker's own wait for a CPU during the
 * job could have made it: what the machine added cannot be told from the target).
 */
export const VERDICT_REASONS = [
  'beyond-baseline',
  'beyond-any-noise',
  'within-spread',
  'below-minimum',
  'too-little-history',
  'machine-busy',
] as const;
export type VerdictReason = (typeof VERDICT_REASONS)[number];

const variantSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));
const intervalSchema = z.tuple([z.number(), z.number()]);

export const comparedQuantitySchema = z.strictObject({
  region: nameSchema,
  target: nameSchema,
  probe: z.enum(PROBE_KINDS),
  variant: variantSchema,
  quantity: z.enum(QUANTITY_IDS),
  /** The quantity in the earlier runs, in its unit: milliseconds, bytes, a share (0..1) or requests per second. */
  baseline: z.strictObject({
    /** One value per earlier run that measured it, newest first. */
    values: z.array(z.number()).min(1),
    median: z.number(),
    /** 1.4826 × the median absolute deviation from the median (a standard deviation for normal data). */
    spread: z.number().nonnegative(),
    /** What night-to-night noise reaches; null with too little history. */
    band: intervalSchema.nullable(),
  }),
  /** The new run's value, and its own 95% interval (null when the interval method is `none`). */
  after: z.number(),
  afterCi95: intervalSchema.nullable(),
  /** What the new run's value is over (samples, requests, handshakes); null for a single value. */
  n: z.int().nonnegative().nullable(),
  /** after − baseline median. */
  change: z.number(),
  /** change / |baseline median|; null when it is 0. */
  relativeChange: z.number().nullable(),
  interval: z.enum(INTERVAL_METHODS),
  /** The smallest change that counts, in the quantity's unit, for this baseline median. */
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
  /** The newest earlier run: findings and differences are against it. */
  before: comparedRunSchema,
  /** Every earlier run whose values make the baseline, newest first (`before` is the first). */
  baseline: z.array(comparedRunSchema).min(1),
  after: comparedRunSchema,
  method: z.strictObject({
    confidence: z.literal(0.95),
    /** Bootstrap resamples and the PRNG seed: the same runs always give the same intervals. */
    resamples: z.int().positive(),
    seed: z.int(),
    /** The baseline rule's constants (coordinator/compare/rules.ts). */
    minRuns: z.int().positive(),
    spreadK: z.number().positive(),
    grossAbsoluteFactor: z.number().positive(),
    grossRatio: z.number().positive(),
  }),
  summary: z.strictObject({
    regressed: z.int().nonnegative(),
    improved: z.int().nonnegative(),
    unchanged: z.int().nonnegative(),
    findingsAppeared: z.int().nonnegative(),
    findingsDisappeared: z.int().nonnegative(),
  }),
  /** Every compared quantity, in place order; for a run of over 10,000 jobs only those that
   * regressed or improved, at most the 10,000 largest relative changes (the summary counts all). */
  quantities: z.array(comparedQuantitySchema),
  findings: z.array(findingChangeSchema),
  differences: z.array(differenceSchema),
  /** In place order; for a run of over 10,000 jobs the first 1,000. */
  notCompared: z.array(notComparedSchema),
  /** What the lists above leave out (all 0 for a run of at most 10,000 jobs): the unchanged
   * quantities, the changed ones past the 10,000 largest, the not-compared past the first 1,000. */
  omitted: z.strictObject({
    unchanged: z.int().nonnegative(),
    changed: z.int().nonnegative(),
    notCompared: z.int().nonnegative(),
  }),
});
export type RunComparison = z.infer<typeof comparisonSchema>;
