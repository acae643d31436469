// The baseline rule: a quantity of the new run is `regressed` or `improved` only when it lies
// beyond the night-to-night spread of the same quantity over the plan's earlier runs *and* the
// change from their median is at least the quantity's minimum effect. With too little history
// the spread is unknown, and only a change beyond any plausible noise counts.
// docs/compare.md has the rule, its constants and why they were chosen.
import type { Verdict, VerdictReason } from '../../contracts/comparison.js';
import { QUANTITIES, type QuantityId } from '../../contracts/quantities.js';
import { median } from '../../common/stats.js';

export interface MinChange {
  /** In the quantity's unit (ms, bytes, a share 0..1, requests/s). */
  absolute: number;
  /** Of |baseline median|. */
  relative: number;
}

/** Medians of time: a millisecond and a fifth. */
const MEDIAN_TIME: MinChange = { absolute: 1, relative: 0.2 };
/** Tails of time (p95, p99) move more from run to run on the same server. */
const TAIL_TIME: MinChange = { absolute: 2, relative: 0.3 };

export function minChangeRule(quantity: QuantityId): MinChange {
  const { unit } = QUANTITIES[quantity];
  if (unit === 'ms') return /_p(95|99)$/.test(quantity) ? TAIL_TIME : MEDIAN_TIME;
  if (unit === 'bytes') return { absolute: 16, relative: 0.05 };
  if (quantity === 'error_rate') return { absolute: 0.01, relative: 0 };
  // A reuse loss needs 10% of the requests (the drain probe's rule, docs/plan.md "Findings").
  if (quantity === 'connections_per_request') return { absolute: 0.1, relative: 0 };
  // Throughput is measured once per run, with no interval: only a large change counts.
  return { absolute: 0, relative: 0.25 };
}

export function minChangeFor(quantity: QuantityId, center: number): number {
  const rule = minChangeRule(quantity);
  return Math.max(rule.absolute, rule.relative * Math.abs(center));
}

/** The constants of the rule, as the comparison JSON records them. */
export const BASELINE_RULE = {
  /** Earlier runs a baseline holds unless told otherwise. */
  defaultRuns: 7,
  /** Fewer earlier runs than this: their spread says nothing yet. */
  minRuns: 3,
  /** The band reaches this many scaled MADs from the baseline median (and at least over every earlier run). */
  spreadK: 3,
  /** With too little history, a change counts only when it is this many times the absolute minimum effect... */
  grossAbsoluteFactor: 5,
  /** ...and the value at least doubled (or at most halved). */
  grossRatio: 2,
} as const;

/**
 * How far a worker's wait for a CPU during a job (`waitMs`, Linux's run_delay) can have moved a
 * time the job measured: a p-th percentile of n samples moves by d only when about (1 − p)·n of
 * them each took d longer, which takes a wait of d·(1 − p)·n at least. 0 for what is not a time.
 */
export function cpuWaitReach(quantity: QuantityId, n: number | null, waitMs: number): number {
  if (QUANTITIES[quantity].unit !== 'ms' || waitMs <= 0) return 0;
  const p = Number(/_p(\d+)$/.exec(quantity)?.[1] ?? 50) / 100;
  return waitMs / Math.max(1, (1 - p) * (n ?? 1));
}

/**
 * A change the workers' waits for a CPU could have made by themselves is not a change of the
 * target: a time goes up when the new run's worker waited (`afterReach`), down when the earlier
 * runs' did (`earlierReach`, the median of their reaches); the new-connection cost, a difference,
 * moves either way with either.
 */
export function withCpuWait(
  quantity: QuantityId,
  judgement: Judgement,
  change: number,
  afterReach: number,
  earlierReach: number,
): Judgement {
  const reach =
    quantity === 'new_connection_cost' ? Math.max(afterReach, earlierReach) : change > 0 ? afterReach : earlierReach;
  return judgement.verdict !== 'unchanged' && Math.abs(change) <= reach
    ? { verdict: 'unchanged', reason: 'machine-busy' }
    : judgement;
}

/** 1.4826 × MAD estimates the standard deviation of normal data; robust to one bad night. */
const MAD_TO_SIGMA = 1.4826;

export interface Baseline {
  /** The earlier runs' values, newest first. */
  values: number[];
  median: number;
  /** 1.4826 × the median absolute deviation of the values from their median. */
  spread: number;
  /** What night-to-night noise reaches: median ± k·spread, widened to cover every earlier value. Null below minRuns. */
  band: [number, number] | null;
}

export function baselineOf(values: number[]): Baseline {
  const center = median(values);
  const spread = MAD_TO_SIGMA * median(values.map((v) => Math.abs(v - center)));
  const reach = BASELINE_RULE.spreadK * spread;
  const band: [number, number] | null =
    values.length < BASELINE_RULE.minRuns
      ? null
      : [Math.min(center - reach, ...values), Math.max(center + reach, ...values)];
  return { values, median: center, spread, band };
}

export interface Judgement {
  verdict: Verdict;
  reason: VerdictReason;
}

/** The smallest distance from the baseline median that counts as beyond any plausible noise. */
export function grossChangeFor(quantity: QuantityId, center: number, upwards: boolean): number {
  const absolute = BASELINE_RULE.grossAbsoluteFactor * minChangeRule(quantity).absolute;
  // Doubled: the distance is |center|; halved: half of it.
  const relative = Math.abs(center) * (upwards ? BASELINE_RULE.grossRatio - 1 : 1 - 1 / BASELINE_RULE.grossRatio);
  return Math.max(absolute, relative, minChangeFor(quantity, center));
}

/**
 * The verdict on the new run's value (`after`, with its own 95% interval when it has one) against
 * its baseline. What counts is the edge of the new run's interval nearest the baseline median: the
 * run's own noise cannot make a change. `worse`: whether a move in the direction the value moved
 * makes things worse (from the quantity's direction; for the new-connection cost, from the side
 * that moved).
 */
export function judge(
  quantity: QuantityId,
  baseline: Baseline,
  after: number,
  afterCi95: [number, number] | null,
  worse: boolean,
): Judgement {
  const center = baseline.median;
  const [lo, hi] = afterCi95 ?? [after, after];
  if (lo <= center && hi >= center) return { verdict: 'unchanged', reason: 'within-spread' };
  const upwards = lo > center;
  const nearest = upwards ? lo : hi;
  const distance = Math.abs(nearest - center);
  const changed: Verdict = worse ? 'regressed' : 'improved';
  if (!baseline.band) {
    return distance >= grossChangeFor(quantity, center, upwards)
      ? { verdict: changed, reason: 'beyond-any-noise' }
      : { verdict: 'unchanged', reason: 'too-little-history' };
  }
  const [bandLow, bandHigh] = baseline.band;
  if (upwards ? nearest <= bandHigh : nearest >= bandLow) return { verdict: 'unchanged', reason: 'within-spread' };
  if (distance < minChangeFor(quantity, center)) return { verdict: 'unchanged', reason: 'below-minimum' };
  return { verdict: changed, reason: 'beyond-baseline' };
}
