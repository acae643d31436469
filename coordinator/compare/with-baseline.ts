// Each run against its baseline, the earlier runs of its plan: the coordinator compares every run
// it finishes, stores the comparison beside the report and pushes its verdicts; `compare
// --previous` reads it.
import type { RunComparison } from '../../contracts/comparison.js';
import type { RunReport } from '../../contracts/result.js';
import type { Logger } from '../../common/log.js';
import type { MetricsPusher } from '../../metrics/pusher.js';
import type { ReportStore } from '../report-store.js';
import type { RunParts } from '../run-parts.js';
import { compareRuns } from './compare-runs.js';
import { pushComparisonMetrics } from '../../metrics/comparison-metrics.js';
import { BASELINE_RULE } from './rules.js';

/** How many earlier runs a run's baseline holds: the plan's `baseline.runs`, else the rule's default. */
export const baselineRunsOf = (report: Pick<RunReport, 'plan'>) =>
  report.plan.baseline?.runs ?? BASELINE_RULE.defaultRuns;

/** Why a run has no comparison: no earlier stored run of its plan to compare it with. */
export interface NoBaseline {
  noBaseline: string;
}

/**
 * The stored comparison of a run, else one made now from the earlier stored runs of its plan
 * (`runs` of them; asking for a number always makes a new one); NoBaseline for a plan's first run.
 * Reads only.
 */
export async function comparisonWithBaseline(
  store: ReportStore,
  report: RunReport | RunParts,
  runs?: number,
): Promise<RunComparison | NoBaseline> {
  const head = 'head' in report ? report.head : report;
  if (runs === undefined) {
    const stored = await store.getComparison(head.runId);
    if (stored) return stored;
  }
  const baseline = await store.previousRuns(head, runs ?? baselineRunsOf(head));
  if (baseline.length === 0)
    return {
      noBaseline: `run "${head.runId}" is the first stored run of plan ${head.plan.name}: nothing to compare with`,
    };
  return compareRuns(baseline, report);
}

/** The coordinator's step after a run's report is stored: compare, store, push. Idempotent (the
 * first stored comparison wins, and is pushed again); never throws, since the run itself is done. */
export async function compareWithBaseline(
  store: ReportStore,
  run: RunParts,
  options: { log: Logger; pusher?: MetricsPusher },
): Promise<RunComparison | undefined> {
  const { log, pusher } = options;
  const report = run.head;
  try {
    const made = await comparisonWithBaseline(store, run);
    if ('noBaseline' in made) {
      log.info({ runId: report.runId, plan: report.plan.name }, made.noBaseline);
      return undefined;
    }
    const comparison = await store.saveComparisonIfAbsent(made);
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
    log.error({ err: (err as Error).message, runId: report.runId }, 'cannot compare the run with its baseline');
    return undefined;
  }
}
