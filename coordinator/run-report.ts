// Assembles the run report (`probefleet.run/v1`): the same shape from embedded and distributed runs.
import type { Plan } from '../contracts/plan.js';
import { RUN_SCHEMA, type ProbeResult, type RunReport, type UnfinishedJob } from '../contracts/result.js';
import { envReferencesIn } from '../contracts/secrets.js';
import { canonicalJson } from '../common/job-signature.js';
import { analyzeRun } from './analysis.js';

/**
 * The plan as reports and the run's parent job keep it: any header value may be a credential,
 * so a value in clear is replaced by `[redacted]`; a value made with references
 * (`Bearer ${env:API_TOKEN}`) is kept, since the secret is in the workers' environment, not
 * in the plan. Credential headers must be references (contracts/secrets.ts), so the redacted
 * plan stays a valid plan: it can be read back, checked and compared.
 */
export function redactPlan(plan: Plan): Plan {
  const redact = (value: string) => (envReferencesIn(value).length > 0 ? value : '[redacted]');
  return {
    ...plan,
    targets: plan.targets.map((t) =>
      t.headers ? { ...t, headers: Object.fromEntries(Object.entries(t.headers).map(([k, v]) => [k, redact(v)])) } : t,
    ),
  };
}

/** The parts of the plan in which two plans differ (as redacted: a header value in clear is not compared). */
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
  };
}
