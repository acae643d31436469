// What one run measured, quantity by quantity (contracts/quantities.ts): each job's values with
// the run's own 95% interval, and the new-connection cost per region and target. A comparison
// judges these against the earlier runs' values; a plan's thresholds bound them.
import type { ComparedQuantity } from '../contracts/comparison.js';
import type { QuantityId } from '../contracts/quantities.js';
import type { ProbeResult, ResultOf } from '../contracts/result.js';
import { decodeHistogram } from '../common/latency-histogram.js';
import { bootstrap, percentile, percentileInterval, percentileRankInterval, wilsonInterval } from '../common/stats.js';
import { measuresOf, type HistogramMeasure, type Measure } from './compare/measures.js';
import { answeredPhase } from './samples.js';

export const COMPARISON_RESAMPLES = 2000;
export const COMPARISON_SEED = 0x5eed;
/** Fewer per-request totals than this in either mode: no new-connection cost. */
const MIN_COST_SAMPLES = 6;

/** One quantity as one run measured it: the value, and its own 95% interval where it has one. */
export interface RunValue {
  value: number;
  ci95: [number, number] | null;
  n: number | null;
  interval: ComparedQuantity['interval'];
}

const fewestValues = new Map<number, number>();

/** The fewest values whose p-th percentile has a distribution-free interval (p50: 6, p95: 72). */
export function fewestValuesFor(p: number): number {
  let fewest = fewestValues.get(p);
  if (fewest === undefined) {
    fewest = 1;
    while (!percentileRankInterval(fewest, p)) fewest++;
    fewestValues.set(p, fewest);
  }
  return fewest;
}

type Percentile = { name: 'p50' | 'p95'; at: number };
const SAMPLE_PERCENTILES: Percentile[] = [
  { name: 'p50', at: 50 },
  { name: 'p95', at: 95 },
];

function histogramValue(measure: HistogramMeasure): RunValue | string {
  const histogram = decodeHistogram(measure.histogram);
  const n = histogram.totalCount;
  const ranks = percentileRankInterval(n, measure.percentile);
  if (!ranks) return `too few requests for an interval (${n})`;
  const at = (rank: number) => histogram.getValueAtPercentile((100 * rank) / n) / 1000;
  return {
    value: histogram.getValueAtPercentile(measure.percentile) / 1000,
    ci95: [at(ranks[0]), at(ranks[1])],
    n,
    interval: 'order-statistics',
  };
}

/** Each quantity of one measure, or why it has no value (too few samples for its interval). */
function valuesOfMeasure(measure: Measure): [QuantityId, RunValue | string][] {
  switch (measure.kind) {
    case 'samples': {
      const sorted = Float64Array.from(measure.values).sort();
      return SAMPLE_PERCENTILES.map(({ name, at }) => {
        const estimate = percentileInterval(sorted, at);
        const value: RunValue | string = estimate
          ? { value: estimate.value, ci95: estimate.ci95, n: sorted.length, interval: 'order-statistics' }
          : `too few samples for a ${name} interval (${sorted.length}; a ${name} needs ${fewestValuesFor(at)})`;
        return [measure.quantities[name], value];
      });
    }
    case 'share':
      return [
        [
          measure.key,
          {
            value: measure.count / measure.of,
            ci95: wilsonInterval(measure.count, measure.of),
            n: measure.of,
            interval: 'wilson',
          },
        ],
      ];
    case 'histogram':
      return [[measure.key, histogramValue(measure)]];
    case 'exact':
    case 'single':
      return [[measure.key, { value: measure.value, ci95: null, n: null, interval: 'none' }]];
  }
}

export function valuesOfResult(result: ProbeResult): Map<QuantityId, RunValue | string> {
  return new Map([...measuresOf(result).values()].flatMap(valuesOfMeasure));
}

export type ReuseResult = ResultOf<'reuse'>;

/** A reuse job's answered per-request totals: its side of the new-connection cost. */
export const reuseTotals = (result: ReuseResult) => answeredPhase(result.details?.samples ?? [], 'total');

/** One mode's side of the new-connection cost: the median of its answered totals, and how many. */
export interface TotalsSummary {
  median: number;
  count: number;
}

export const totalsSummary = (totals: readonly number[]): TotalsSummary => ({
  median: totals.length === 0 ? Number.NaN : percentile(Float64Array.from(totals).sort(), 50),
  count: totals.length,
});

/** One run's new-connection cost, median(new) − median(reused), with the two medians it is made of
 * and the fewer of the two modes' samples; undefined when either mode has too few. */
export function costOfSummaries(reused: TotalsSummary, fresh: TotalsSummary) {
  const samples = Math.min(reused.count, fresh.count);
  if (samples < MIN_COST_SAMPLES) return undefined;
  return { value: fresh.median - reused.median, reusedMedian: reused.median, newMedian: fresh.median, samples };
}

/** The cost from the two modes' answered per-request totals, with its bootstrap 95% interval when asked. */
export function costOf(reusedTotals: readonly number[], newTotals: readonly number[], withInterval: boolean) {
  const cost = costOfSummaries(totalsSummary(reusedTotals), totalsSummary(newTotals));
  if (!cost) return undefined;
  const ci95 = withInterval
    ? bootstrap(
        [reusedTotals, newTotals],
        ([r, n]) => [percentile(n, 50) - percentile(r, 50)],
        COMPARISON_RESAMPLES,
        COMPARISON_SEED,
      ).ci95[0]
    : null;
  const value: RunValue = { value: cost.value, ci95, n: null, interval: 'bootstrap' };
  return { ...cost, value };
}
