// Assembles the run report (`probefleet.run/v1`): the same shape from embedded and distributed runs.
import type { Plan } from '../contracts/plan.js';
import {
  isNotableResult,
  NOTABLE_RESULTS_KEPT,
  RUN_SCHEMA,
  type ProbeResult,
  type RunReport,
  type RunReportHead,
  type UnfinishedJob,
  reportOf,
} from '../contracts/result.js';
import { redactSettings, redactTarget } from '../contracts/secrets.js';
import { canonicalJson } from '../common/job-signature.js';
import { analysisGroups, RunAnalyzer } from './analysis.js';
import { mergeShards } from './load-shards.js';
import { ThresholdChecker } from './thresholds.js';

/** The plan as a report, the runs queue and `runs show` hold it (a targetFiles entry's settings as a target's). */
export function redactPlan(plan: Plan): Plan {
  return {
    ...plan,
    targets: plan.targets.map(redactTarget),
    ...(plan.targetFiles ? { targetFiles: plan.targetFiles.map(redactSettings) } : {}),
  };
}

/** The parts of the plan in which two plans differ, as redacted (header values and URL secrets are not compared). */
export function planDifferences(a: Plan, b: Plan): string[] {
  const [ra, rb] = [redactPlan(a), redactPlan(b)] as Record<string, unknown>[];
  return [...new Set([...Object.keys(ra), ...Object.keys(rb)])]
    .filter((key) => canonicalJson(ra[key]) !== canonicalJson(rb[key]))
    .sort();
}

/** What a run is, before its results. */
interface RunOf {
  runId: string;
  mode: RunReport['mode'];
  plan: Plan;
  startedAt: Date;
}

/**
 * A run's report built from its results a group at a time (analysisGroupOf): a big run's finisher
 * holds one target's results at once, stores them and lets them go; the head it ends with is the
 * report without its results (counted, and the first few with an error kept).
 */
export class RunReportBuilder {
  private readonly analyzer = new RunAnalyzer();
  private readonly thresholds: ThresholdChecker;
  private resultCount = 0;
  private okCount = 0;
  private readonly notableResults: ProbeResult[] = [];

  constructor(private readonly run: RunOf) {
    this.thresholds = new ThresholdChecker(run.plan);
  }

  /** One analysis group's results, whole; returns them as the report holds them (a job spread over
   * several workers as one result: analysis, thresholds and views see that). */
  add(group: readonly ProbeResult[]): ProbeResult[] {
    const results = mergeShards(group);
    this.analyzer.add(results);
    this.thresholds.add(results);
    for (const r of results) {
      this.resultCount++;
      if (r.ok) this.okCount++;
      if (isNotableResult(r) && this.notableResults.length < NOTABLE_RESULTS_KEPT) this.notableResults.push(r);
    }
    return results;
  }

  /** The report without its results, once every group is added. */
  head(finishedAt: Date, unfinishedJobs: UnfinishedJob[] = []): RunReportHead {
    const { runId, mode, plan, startedAt } = this.run;
    return {
      schema: RUN_SCHEMA,
      runId,
      mode,
      plan: redactPlan(plan),
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      unfinishedJobs,
      ...this.analyzer.finish(),
      thresholds: this.thresholds.outcome(),
      resultCount: this.resultCount,
      okCount: this.okCount,
      notableResults: this.notableResults,
    };
  }
}

export function buildRunReport(
  run: RunOf & {
    finishedAt: Date;
    results: ProbeResult[];
    /** Distributed runs: jobs without a result (failed for good, or not run by the deadline). */
    unfinishedJobs?: UnfinishedJob[];
  },
): RunReport {
  const builder = new RunReportBuilder(run);
  // Merged before grouping, so the report keeps the results' order.
  const results = mergeShards(run.results);
  for (const group of analysisGroups(results, (r) => r.target)) builder.add(group);
  return reportOf(builder.head(run.finishedAt, run.unfinishedJobs), results);
}
