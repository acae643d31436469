// Assembles the run report (`probefleet.run/v1`): the same shape from embedded and distributed runs.
import type { Plan } from '../contracts/plan.js';
import { RUN_SCHEMA, type ProbeResult, type RunReport, type UnfinishedJob } from '../contracts/result.js';
import { REDACTED, redactUrl } from '../contracts/secrets.js';
import { canonicalJson } from '../common/job-signature.js';
import { analyzeRun } from './analysis.js';
import { checkThresholds } from './thresholds.js';

/** A target as shown and stored outside the worker: header names without values (any may be a
 * credential), the URL without user:password and without referenced or credential query values. */
export function redactTarget<T extends { url: string; headers?: Record<string, string>; proxy?: string }>(
  target: T,
): T {
  return {
    ...target,
    url: redactUrl(target.url),
    ...(target.proxy ? { proxy: redactUrl(target.proxy) } : {}),
    ...(target.headers ? { headers: Object.fromEntries(Object.keys(target.headers).map((k) => [k, REDACTED])) } : {}),
  };
}

/** The plan as a report, the runs queue and `runs show` hold it. */
export function redactPlan(plan: Plan): Plan {
  return { ...plan, targets: plan.targets.map(redactTarget) };
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
  return {
    schema: RUN_SCHEMA,
    runId: run.runId,
    mode: run.mode,
    plan: redactPlan(run.plan),
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.finishedAt.toISOString(),
    results: run.results,
    unfinishedJobs: run.unfinishedJobs ?? [],
    ...analyzeRun(run.results),
    thresholds: checkThresholds(run.plan, run.results),
  };
}
