// Each run against its baseline, the earlier runs of its plan: the coordinator compares every run
// it finishes (in a thread of its own, compare-thread.ts; one at a time), stores the comparison
// beside the report and pushes its verdicts; `compare --previous` reads it.
import type { RunComparison } from '../../contracts/comparison.js';
import type { Logger } from '../../common/log.js';
import type { MetricsPusher } from '../../metrics/pusher.js';
import type { FleetClient } from '../fleet-client.js';
import type { RunReportHead } from '../../contracts/result.js';
import { ComparisonStoppedError, compareInThread, noBaselineFor } from './compare-thread.js';
import { pushComparisonMetrics } from '../../metrics/comparison-metrics.js';
import { oneAtATime } from '../../common/settle.js';

/** The coordinator's step after a run's report is stored: compare, store, push. Idempotent (the
 * first stored comparison wins, and is pushed again); never throws, since the run itself is done.
 * `signal` (the coordinator closing) stops a comparison being made; `compare --previous` makes it. */
export async function compareWithBaseline(
  fleet: Pick<FleetClient, 'redis' | 'prefix' | 'store'>,
  report: Pick<RunReportHead, 'runId' | 'plan' | 'startedAt'>,
  options: { log: Logger; pusher?: MetricsPusher; signal?: AbortSignal; heapMb?: number },
): Promise<RunComparison | undefined> {
  const { log, pusher, signal, heapMb } = options;
  try {
    // A plan's first run starts no thread: its summaries say so in one round trip.
    const made = (await fleet.store.hasPreviousRun(report))
      ? await compareInThread(
          { stored: { redis: fleet.redis, prefix: fleet.prefix }, previous: report.runId, baselineRuns: undefined },
          { logLevel: log.level, ...(signal ? { signal } : {}), ...(heapMb ? { heapMb } : {}) },
        )
      : noBaselineFor(report);
    if ('noBaseline' in made) {
      log.info({ runId: report.runId, plan: report.plan.name }, made.noBaseline);
      return undefined;
    }
    const comparison = await fleet.store.saveComparisonIfAbsent(made);
    log.info(
      {
        runId: report.runId,
        previous: comparison.before.runId,
        baselineRuns: comparison.baseline.length,
        ...comparison.summary,
      },
      comparison.summary.regressed > 0 ? 'compared with the baseline: regressions' : 'compared with the baseline',
    );
    if (pusher) await pushComparisonMetrics(pusher, comparison, log);
    return comparison;
  } catch (err) {
    const stopped = err instanceof ComparisonStoppedError;
    log[stopped ? 'warn' : 'error'](
      { err: (err as Error).message, runId: report.runId },
      stopped
        ? `the comparison with the baseline was stopped (the coordinator is closing); probefleet compare --previous ${report.runId} makes it`
        : 'cannot compare the run with its baseline',
    );
    return undefined;
  }
}

/** The coordinator's comparisons, made one at a time: it finishes up to four runs at once, and
 * each comparison's thread has a heap of its own. */
export type ComparisonsOneAtATime = typeof compareWithBaseline;

/** `signal` (the coordinator closing) stops the one being made and those waiting; `heapMb` is each thread's heap. */
export function comparisonsOneAtATime(settings: {
  signal: AbortSignal;
  heapMb: number | undefined;
}): ComparisonsOneAtATime {
  const inTurn = oneAtATime();
  const { signal, heapMb } = settings;
  return (fleet, report, options) =>
    inTurn(() => compareWithBaseline(fleet, report, { ...options, signal, ...(heapMb ? { heapMb } : {}) }));
}
