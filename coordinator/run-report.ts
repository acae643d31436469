// Assembles the run report (`probefleet.run/v1`): the same shape from embedded and distributed runs.
import type { Plan } from '../contracts/plan.js';
import { RUN_SCHEMA, type ProbeResult, type RunReport, type UnfinishedJob } from '../contracts/result.js';
import { redactSettings, redactTarget } from '../contracts/secrets.js';
import { canonicalJson } from '../common/job-signature.js';
import { analyzeRun } from './analysis.js';
import { mergeShards } from './load-shards.js';
import { checkThresholds } from './thresholds.js';

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

export function buildRunReport(run: {
  runId: string;
  mode: RunReport['mode'];
  plan: Plan;
  startedAt: Date;
  finishedAt: Date;
  results: ProbeResult[];
  /** Distributed runs: jobs without a result (failed for good, or not run by the deadline). */
  unfinishedJobs?: UnfinishedJob[];
}): RunReport {
  // A job spread over several workers is one result from here on: analysis, thresholds and views see that.
  const results = mergeShards(run.results);
  return {
    schema: RUN_SCHEMA,
    runId: run.runId,
    mode: run.mode,
    plan: redactPlan(run.plan),
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.finishedAt.toISOString(),
    results,
    unfinishedJobs: run.unfinishedJobs ?? [],
    ...analyzeRun(results),
    thresholds: checkThresholds(run.plan, results),
  };
}
