// Load results of one experiment and target from every region (or worker), merged: histograms
// are added and percentiles read from the sum. Averaging percentiles would be wrong: the p99 of
// two halves is not the mean of their p99s.
import type { LoadTotal } from '../contracts/probes/load.js';
import type { ProbeResult, ResultOf } from '../contracts/result.js';
import { mergeHistograms, percentilesOf } from '../common/latency-histogram.js';

type LoadResult = ResultOf<'load'> & { details: NonNullable<ResultOf<'load'>['details']> };

/** Jobs of one experiment differ only in region: their ids end in the same
 * `.<target>.<probe>-<variant>-<hash of parameters>` (coordinator/split.ts). */
function experimentKey(result: ProbeResult): string {
  return `${result.target}\u0000${result.jobId.slice(result.jobId.lastIndexOf('.') + 1)}`;
}

export function loadTotals(results: readonly ProbeResult[]): LoadTotal[] {
  const groups = new Map<string, LoadResult[]>();
  for (const result of results) {
    if (result.probe !== 'load' || !result.details) continue;
    const key = experimentKey(result);
    groups.set(key, [...(groups.get(key) ?? []), result as LoadResult]);
  }
  return [...groups.values()].map((group) => {
    const services = group.flatMap((r) => (r.details.serviceTimeHistogram ? [r.details.serviceTimeHistogram] : []));
    return {
      target: group[0].target,
      variant: group[0].variant,
      regions: group.map((r) => r.region),
      completed: sum(group.map((r) => r.details.completed)),
      errors: sum(group.map((r) => r.summary.errors)),
      connectionsOpened: sum(group.map((r) => r.details.connectionsOpened)),
      requestsPerSecond: sum(group.map((r) => r.details.requestsPerSecond)),
      latencyMs: percentilesOf(mergeHistograms(group.map((r) => r.details.latencyHistogram))),
      ...(services.length === group.length ? { serviceTimeMs: percentilesOf(mergeHistograms(services)) } : {}),
    };
  });
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
