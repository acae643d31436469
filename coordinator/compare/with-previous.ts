// Each run against the previous run of its plan: the coordinator compares every run it finishes,
// stores the comparison beside the report and pushes its verdicts; `compare --previous` reads it.
import type { RunComparison } from '../../contracts/comparison.js';
import type { RunReport } from '../../contracts/result.js';
import type { Logger } from '../../common/log.js';
import type { MetricsPusher } from '../../metrics/pusher.js';
import type { ReportStore } from '../report-store.js';
import { compareRuns } from './compare-runs.js';
import { pushComparisonMetrics } from '../../metrics/comparison-metrics.js';

/** The stored comparison of a run, else one made now from the previous stored run of its plan;
 * undefined for a plan's first run. Reads only. */
export async function comparisonWithPrevious(
  store: ReportStore,
  report: RunReport,
): Promise<RunComparison | undefined> {
  const stored = await store.getComparison(report.runId);
  if (stored) return stored;
  const previous = await store.previous(report);
  return previous && compareRuns(previous, report);
}

/** The coordinator's step after a run's report is stored: compare, store, push. Idempotent (the
 * first stored comparison wins, and is pushed again); never throws, since the run itself is done. */
export async function compareWithPrevious(
  store: ReportStore,
  report: RunReport,
  options: { log: Logger; pusher?: MetricsPusher },
): Promise<RunComparison | undefined> {
  const { log, pusher } = options;
  try {
    const made = await comparisonWithPrevious(store, report);
    if (!made) {
      log.info(
        { runId: report.runId, plan: report.plan.name },
        'first stored run of the plan: nothing to compare with',
      );
      return undefined;
    }
    const comparison = await store.saveComparisonIfAbsent(made);
    log.info(
      { runId: report.runId, previous: comparison.before.runId, ...comparison.summary },
      comparison.summary.regressed > 0
        ? 'compared with the previous run: regressions'
        : 'compared with the previous run',
    );
    if (pusher) await pushComparisonMetrics(pusher, comparison, log);
    return comparison;
  } catch (err) {
    log.error({ err: (err as Error).message, runId: report.runId }, 'cannot compare the run with the previous one');
    return undefined;
  }
}
