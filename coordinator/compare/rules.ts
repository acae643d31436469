// The verdict rule: a change is `regressed` or `improved` only when its whole 95% interval lies
// beyond the quantity's minimum change, which is both an absolute amount and a share of the
// value before. The absolute part keeps loopback's
// microsecond jitter, and a busy machine's, from being called a regression; the relative part
// scales it to slow links. docs/compare.md has the table and how it was chosen.
import { QUANTITIES, type QuantityId, type Verdict } from '../../contracts/comparison.js';

export interface MinChange {
  /** In the quantity's unit (ms, bytes, a share 0..1, requests/s). */
  absolute: number;
  /** Of |before|. */
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

export function minChangeFor(quantity: QuantityId, before: number): number {
  const rule = minChangeRule(quantity);
  return Math.max(rule.absolute, rule.relative * Math.abs(before));
}

export interface Judgement {
  verdict: Verdict;
  reason: 'material' | 'within-noise' | 'below-minimum';
}

/**
 * Regressed or improved when the whole 95% interval of the change lies beyond the minimum change
 * (so the change is at least the minimum, with 95% confidence, one-sided 97.5%); without an
 * interval, when the change itself is at least the minimum. `worse`: whether this change makes
 * things worse (from the quantity's direction; for the new-connection cost, from the side that moved).
 */
export function judge(change: number, ci95: [number, number] | null, minChange: number, worse: boolean): Judgement {
  if (ci95 && ci95[0] <= 0 && ci95[1] >= 0) return { verdict: 'unchanged', reason: 'within-noise' };
  const nearest = ci95 ? Math.min(Math.abs(ci95[0]), Math.abs(ci95[1])) : Math.abs(change);
  if (change === 0 || nearest < minChange) return { verdict: 'unchanged', reason: 'below-minimum' };
  return { verdict: worse ? 'regressed' : 'improved', reason: 'material' };
}
