// Turns a run's flow into its report: the results its children returned, the children that
// failed for good, and the jobs no worker took before the deadline. Whoever finishes a run
// (the coordinator processing the parent job, or the `run` command that submitted it) calls
// the same code, and the first stored report wins.
import type { Job } from 'bullmq';
import { parseJobKey, regionOfQueue } from '../contracts/queues.js';
import { probeResultSchema, type ProbeResult, type RunReport, type UnfinishedJob } from '../contracts/result.js';
import { runJobDataSchema, type RunJobData } from '../contracts/run-job.js';
import type { Fleet } from './fleet.js';
import { buildRunReport } from './run-report.js';

export class RunDataError extends Error {
  override name = 'RunDataError';
}

export function runDataOf(parent: Job): RunJobData {
  const parsed = runJobDataSchema.safeParse(parent.data);
  if (!parsed.success)
    throw new RunDataError(`run job ${parent.id} holds no valid run: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** Results and unfinished jobs of a run whose children are all done (or removed at the deadline). */
export async function collectRun(
  fleet: Fleet,
  parent: Job,
  data: RunJobData,
): Promise<{ results: ProbeResult[]; unfinishedJobs: UnfinishedJob[] }> {
  const [values, failures] = await Promise.all([parent.getChildrenValues(), parent.getIgnoredChildrenFailures()]);
  const resultById = new Map<string, ProbeResult | string>();
  for (const [key, value] of Object.entries(values)) {
    const id = parseJobKey(fleet.prefix, key)?.jobId;
    if (!id) continue;
    const parsed = probeResultSchema.safeParse(value);
    // A result that breaks the contract is as good as none: say so rather than drop it.
    resultById.set(
      id,
      parsed.success
        ? (parsed.data as ProbeResult)
        : `the worker returned an invalid result: ${parsed.error.issues[0]?.message}`,
    );
  }
  const failureById = new Map<string, string>();
  for (const [key, reason] of Object.entries(failures)) {
    const id = parseJobKey(fleet.prefix, key)?.jobId;
    if (id) failureById.set(id, reason);
  }

  const results: ProbeResult[] = [];
  const unfinishedJobs: UnfinishedJob[] = [];
  for (const ref of data.jobs) {
    const result = resultById.get(ref.jobId);
    if (result && typeof result !== 'string') results.push(result);
    else if (typeof result === 'string') unfinishedJobs.push({ ...ref, status: 'failed', reason: result });
    else if (failureById.has(ref.jobId))
      unfinishedJobs.push({ ...ref, status: 'failed', reason: failureById.get(ref.jobId)! });
    else
      unfinishedJobs.push({
        ...ref,
        status: 'not-run',
        reason: `no worker of region "${ref.region}" took it before the run's deadline (${data.deadline})`,
      });
  }
  return { results, unfinishedJobs };
}

/** Builds the run's report and stores it, unless it is stored already; returns the stored one. */
export async function finishRun(
  fleet: Fleet,
  parent: Job,
  finishedAt = new Date(),
): Promise<{ report: RunReport; stored: boolean }> {
  const data = runDataOf(parent);
  const stored = await fleet.store.get(data.runId);
  if (stored) return { report: stored, stored: false };
  const { results, unfinishedJobs } = await collectRun(fleet, parent, data);
  const report = buildRunReport({
    runId: data.runId,
    mode: 'distributed',
    plan: data.plan,
    startedAt: new Date(data.submittedAt),
    finishedAt,
    results,
    unfinishedJobs,
  });
  return fleet.store.saveIfAbsent(report);
}

/** Past its deadline, a run stops waiting: children no worker holds are removed from their
 * queues (and so from the parent's dependencies). Jobs a worker is running still finish, within
 * their own time bound. Idempotent; returns how many children it removed. */
export async function expireRunIfDue(parent: Job, data: RunJobData, now = Date.now()): Promise<number> {
  if (now < Date.parse(data.deadline)) return 0;
  const before = (await parent.getDependenciesCount({ unprocessed: true })).unprocessed ?? 0;
  if (before === 0) return 0;
  await parent.removeUnprocessedChildren();
  const after = (await parent.getDependenciesCount({ unprocessed: true })).unprocessed ?? 0;
  return before - after;
}

/** Jobs of the run not done yet, per region (from the parent's pending dependencies: keys only). */
export async function pendingByRegion(fleet: Fleet, parent: Job): Promise<Map<string, number>> {
  const pending = new Map<string, number>();
  let cursor = 0;
  do {
    const page = await parent.getDependencies({ unprocessed: { cursor, count: 500 } });
    for (const key of page.unprocessed ?? []) {
      const region = regionOfQueue(parseJobKey(fleet.prefix, key)?.queueName ?? '');
      if (region) pending.set(region, (pending.get(region) ?? 0) + 1);
    }
    cursor = page.nextUnprocessedCursor ?? 0;
  } while (cursor !== 0);
  return pending;
}
