// Assembles the run report (`probefleet.run/v1`): the same shape from embedded and distributed runs.
import type { Plan } from '../contracts/plan.js';
import { RUN_SCHEMA, type ProbeResult, type RunReport, type UnfinishedJob } from '../contracts/result.js';
import { analyzeRun } from './analysis.js';

/** Header values may be credentials; the report keeps their names only. */
export function redactPlan(plan: Plan): Plan {
  return {
    ...plan,
    targets: plan.targets.map((t) =>
      t.headers ? { ...t, headers: Object.fromEntries(Object.keys(t.headers).map((k) => [k, '[redacted]'])) } : t,
    ),
  };
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
  };
}
