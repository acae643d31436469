// `probefleet run PLAN --redis URL`: waits for a submitted run's flow, showing progress per
// region, stops waiting for regions at the run's deadline, and returns the stored report. The
// wait is bounded whatever Redis does: outages are waited out until the run's end (runEndOf).
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunReport } from '../contracts/result.js';
import type { RunJobData } from '../contracts/run-job.js';
import type { Logger } from '../common/log.js';
import type { Fleet } from './fleet.js';
import type { RegionProgress } from './region-progress.js';
import { expireRunIfDue, finishRun, pendingByRegion, RunDataError } from './run-finisher.js';

/** Past the deadline, a job a worker took just before it still has its own time bound to finish
 * (jobTimeoutSeconds), plus this: the worker's grace on that bound (10 s), or the lock of a worker
 * lost at that moment (half the stall timeout: 15 s by default), and a margin. */
export const RUN_END_SLACK_SECONDS = 30;

/** When waiting for the run ends, whatever happens: the deadline, one job's time bound, the slack. */
export function runEndOf(data: RunJobData): Date {
  return new Date(Date.parse(data.deadline) + (data.plan.jobTimeoutSeconds + RUN_END_SLACK_SECONDS) * 1000);
}

export interface WaitOptions {
  log: Logger;
  progress: RegionProgress;
  /** Stops waiting (the run goes on in the fleet). */
  signal?: AbortSignal;
  pollMs?: number;
}

/** Waiting ended at the run's end with jobs still pending while Redis answered. */
export class RunNotFinishedError extends Error {
  override name = 'RunNotFinishedError';
}

export function jobsPerRegion(data: RunJobData): Map<string, number> {
  const totals = new Map<string, number>();
  for (const job of data.jobs) totals.set(job.region, (totals.get(job.region) ?? 0) + 1);
  return totals;
}

/**
 * The run's report once every job is done or the deadline has passed; undefined if interrupted.
 * Redis going away is waited out until the run's end (runEndOf); then RedisUnreachableError if
 * Redis was the reason, RunNotFinishedError otherwise.
 */
export async function waitForRun(fleet: Fleet, data: RunJobData, options: WaitOptions): Promise<RunReport | undefined> {
  const { log, progress, signal } = options;
  const totals = jobsPerRegion(data);
  const end = runEndOf(data);
  let lastProblem = '';
  let unreachableSince: Date | undefined;
  let pendingNow = new Map<string, number>();
  try {
    while (!signal?.aborted) {
      if (Date.now() > end.getTime()) {
        const after = `the run goes on in the fleet (probefleet runs show ${data.runId})`;
        if (
          unreachableSince &&
          !(await fleet.reachable(1_000).then(
            () => true,
            () => false,
          ))
        )
          throw fleet.unreachable(
            `no answer since ${unreachableSince.toISOString()}, and the run's wait ended at ${end.toISOString()}; ${after}`,
          );
        const pending = [...pendingNow].map(([region, n]) => `${region} ${n}`).join(', ');
        throw new RunNotFinishedError(
          `run ${data.runId} had jobs pending when its wait ended (${end.toISOString()}: the deadline, one job's time bound and ${RUN_END_SLACK_SECONDS} s): ${pending || 'unknown'}${lastProblem ? ` (last error: ${lastProblem})` : ''}; ${after}`,
        );
      }
      try {
        const parent = await fleet.runs.getJob(data.runId);
        if (!parent) {
          const stored = await fleet.store.get(data.runId);
          if (stored) return stored;
          throw new RunDataError(`run ${data.runId} is no longer in Redis and has no stored report`);
        }
        if ((await parent.getState()) !== 'waiting-children') {
          progress.update(totals); // nothing is pending any more
          return (await finishRun(fleet, parent)).report;
        }
        pendingNow = await pendingByRegion(fleet, parent, data);
        progress.update(new Map([...totals].map(([region, total]) => [region, total - (pendingNow.get(region) ?? 0)])));
        const removed = await expireRunIfDue(fleet, parent, data);
        if (removed > 0)
          log.warn(
            { runId: data.runId, jobs: removed, deadline: data.deadline },
            'deadline passed: jobs no worker took are reported as not run',
          );
        lastProblem = '';
        unreachableSince = undefined;
      } catch (err) {
        if (err instanceof RunDataError) throw err;
        // Redis restarting or unreachable: keep waiting; the fleet's state is in Redis, not here.
        unreachableSince ??= new Date();
        const problem = (err as Error).message;
        if (problem !== lastProblem) log.warn({ err: problem }, 'cannot read the run from Redis; retrying');
        lastProblem = problem;
      }
      await sleep(options.pollMs ?? 500, undefined, { signal }).catch(() => {});
    }
    return undefined;
  } finally {
    progress.done();
  }
}
