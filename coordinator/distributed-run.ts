// `probefleet run PLAN --redis URL`: waits for a submitted run's flow, showing progress per
// region, stops waiting for regions at the run's deadline, and returns the stored report.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunReport } from '../contracts/result.js';
import type { RunJobData } from '../contracts/run-job.js';
import type { Logger } from '../common/log.js';
import type { Fleet } from './fleet.js';
import type { RegionProgress } from './region-progress.js';
import { expireRunIfDue, finishRun, pendingByRegion, RunDataError } from './run-finisher.js';

export interface WaitOptions {
  log: Logger;
  progress: RegionProgress;
  /** Stops waiting (the run goes on in the fleet). */
  signal?: AbortSignal;
  pollMs?: number;
}

export function jobsPerRegion(data: RunJobData): Map<string, number> {
  const totals = new Map<string, number>();
  for (const job of data.jobs) totals.set(job.region, (totals.get(job.region) ?? 0) + 1);
  return totals;
}

/** The run's report once every job is done or the deadline has passed; undefined if interrupted. */
export async function waitForRun(fleet: Fleet, data: RunJobData, options: WaitOptions): Promise<RunReport | undefined> {
  const { log, progress, signal } = options;
  const totals = jobsPerRegion(data);
  let lastProblem = '';
  try {
    while (!signal?.aborted) {
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
        const pending = await pendingByRegion(fleet, parent);
        progress.update(new Map([...totals].map(([region, total]) => [region, total - (pending.get(region) ?? 0)])));
        const removed = await expireRunIfDue(parent, data);
        if (removed > 0)
          log.warn(
            { runId: data.runId, jobs: removed, deadline: data.deadline },
            'deadline passed: jobs no worker took are reported as not run',
          );
        lastProblem = '';
      } catch (err) {
        if (err instanceof RunDataError) throw err;
        // Redis restarting or unreachable: keep waiting; the fleet's state is in Redis, not here.
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
