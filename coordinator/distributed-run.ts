// `probefleet run PLAN --redis URL`: waits for a submitted run's flow, showing progress per
// region (jobs done, and jobs lost: not in Redis), adds again what a failover lost when it can,
// stops waiting for regions at the run's deadline, and returns the stored report (or, when Redis is
// too full to store it, the report as built). The wait is bounded whatever Redis does: outages are
// waited out until the run's end (runEndOf), an instant on Redis's clock that this process counts
// down on its own monotonic clock.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from 'bullmq';
import type { RunReport } from '../contracts/result.js';
import { jobsPerRegionOf, type RunJobData } from '../contracts/run-job.js';
import type { Logger } from '../common/log.js';
import { Backoff, isRedisFull } from '../common/redis-errors.js';
import { redisClockAheadMs } from '../common/redis.js';
import { settlesWithin } from '../common/settle.js';
import type { Fleet } from './fleet.js';
import type { Completion } from './flow.js';
import type { RegionProgress } from './region-progress.js';
import { buildRunInMemory, expireRunIfDue, finishRun, ReportNotStoredError, RunDataError } from './run-finisher.js';
import { partsOf, type RunParts, wholeReport } from './run-parts.js';
import { countJobs, readRunState } from './run-state.js';

/** Past the deadline, a job a worker took just before it still has its own time bound to finish
 * (jobTimeoutSeconds), plus this: the worker's grace on that bound (10 s), or the lock of a worker
 * lost at that moment (half the stall timeout: 15 s by default), and a margin. */
export const RUN_END_SLACK_SECONDS = 30;

/** Times a wait adds lost batches again before it leaves them to the deadline. */
const REPAIRS = 3;

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
  /** A line for the user: batches lost and added again, a report Redis is too full to store. */
  notice?: (line: string) => void;
  /** Adds again what Redis lost of the run (the submitter's completeRun); without it, lost jobs are
   * reported as such when the run ends. */
  repair?: () => Promise<Completion>;
  /** How long a report that Redis is too full to store is tried again before it is returned
   * unstored. @defaultValue 10000 */
  storeWithinMs?: number;
}

/** Waiting ended at the run's end with jobs still pending while Redis answered. */
export class RunNotFinishedError extends Error {
  override name = 'RunNotFinishedError';
}

/** How long until the run's end (runEndOf), on this process's monotonic clock: the end is an
 * instant on Redis's clock, so its distance is read there once, and neither this machine's clock
 * being off nor it being set while waiting moves the end. */
async function untilRunEnd(fleet: Fleet, data: RunJobData, log: Logger): Promise<() => number> {
  let aheadMs = 0;
  try {
    aheadMs = await redisClockAheadMs(() => fleet.client.time());
  } catch (err) {
    log.warn({ err: (err as Error).message }, "cannot read Redis's clock: the run's end is counted on this machine's");
  }
  const endAt = performance.now() + (runEndOf(data).getTime() - (Date.now() + aheadMs));
  return () => endAt - performance.now();
}

/**
 * The run's report once every job is done or the deadline has passed; undefined if interrupted.
 * Redis going away is waited out until the run's end (runEndOf), and no read of Redis is waited
 * for past it; then RedisUnreachableError if Redis was the reason, RunNotFinishedError otherwise.
 */
export async function waitForRun(fleet: Fleet, data: RunJobData, options: WaitOptions): Promise<RunReport | undefined> {
  const parts = await waitForRunParts(fleet, data, options);
  return parts && wholeReport(parts);
}

/** waitForRun, with the run as its parts (run-parts.ts): what a big run is shown from. */
export async function waitForRunParts(
  fleet: Fleet,
  data: RunJobData,
  options: WaitOptions,
): Promise<RunParts | undefined> {
  const { log, progress, signal } = options;
  const notice = options.notice ?? ((line: string) => log.warn(line));
  const totals = jobsPerRegionOf(data);
  const end = runEndOf(data);
  let lastProblem = '';
  let unreachableSince: Date | undefined;
  let pendingNow = new Map<string, number>();
  let repairs = 0;
  /** Adds what is missing again, while repairs are left; false when none are. */
  const repair = async (what: string): Promise<boolean> => {
    if (!options.repair || repairs >= REPAIRS) return false;
    repairs++;
    notice(`run ${data.runId}: ${what}; adding it again (${repairs} of ${REPAIRS})`);
    const { added, batches } = await options.repair();
    notice(`run ${data.runId}: added ${added} of ${batches} batches again`);
    return true;
  };
  /** One look at the run: its report once it is over; else progress shown, lost jobs added again,
   * and past the deadline the jobs no worker holds taken off. */
  const look = async (): Promise<RunParts | undefined> => {
    const state = await readRunState(fleet, data);
    if (!state.parent) {
      const stored = await fleet.store.parts(data.runId);
      if (stored) return stored;
      // Lost with its batches (a failover to a replica that had not received them).
      if (state.pastDeadline || !(await repair('its parent job is no longer in Redis')))
        throw new RunDataError(`run ${data.runId} is no longer in Redis and has no stored report`);
      return undefined;
    }
    // The parent job (its data lists every job) is read only to finish or expire the run, not to
    // show progress: a big run's data is tens of MB.
    const parentJob = async (): Promise<Job | undefined> => fleet.runs.getJob(data.runId);
    if (!state.waiting) {
      const parent = await parentJob();
      if (!parent) return undefined; // gone since the reading: finished, and read as such next time
      progress.update(totals); // nothing is pending any more
      return finished(fleet, parent, options, notice);
    }
    const counts = await countJobs(fleet, data, state);
    const lost = new Map([...counts].map(([region, count]) => [region, count.lost]));
    pendingNow = new Map([...counts].map(([region, count]) => [region, count.pending + count.lost]));
    progress.update(new Map([...counts].map(([region, count]) => [region, count.done])), lost);
    const lostJobs = [...lost.values()].reduce((sum, n) => sum + n, 0);
    if (lostJobs > 0 || (state.gated && !state.pastDeadline))
      await repair(
        lostJobs > 0
          ? `${lostJobs} of its jobs are not in Redis (lost: a failover, or a restart without persistence)`
          : 'its submission gate is back in Redis (a failover lost its removal)',
      );
    const parent = state.pastDeadline ? await parentJob() : undefined;
    if (parent) {
      const removed = await expireRunIfDue(fleet, parent, data, state.now);
      if (removed > 0)
        log.warn(
          { runId: data.runId, jobs: removed, deadline: data.deadline },
          'deadline passed: jobs no worker took are reported as not run',
        );
    }
    return undefined;
  };
  try {
    const remainingMs = await untilRunEnd(fleet, data, log);
    while (!signal?.aborted) {
      if (remainingMs() <= 0) {
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
      let report: RunParts | undefined;
      let failure: Error | undefined;
      const looked = look().then(
        (found) => (report = found),
        (err: Error) => (failure = err),
      );
      if (!(await settlesWithin(looked, remainingMs())))
        failure = new Error("no answer from Redis before the run's wait ended");
      if (report) return report;
      if (failure instanceof RunDataError) throw failure;
      if (failure) {
        // Redis restarting, unreachable or full: keep waiting; the fleet's state is in Redis, not here.
        unreachableSince ??= new Date();
        if (failure.message !== lastProblem)
          log.warn(
            { err: failure.message },
            isRedisFull(failure) ? 'Redis is full; retrying' : 'cannot read the run from Redis; retrying',
          );
        lastProblem = failure.message;
      } else {
        lastProblem = '';
        unreachableSince = undefined;
      }
      await sleep(Math.min(options.pollMs ?? 500, Math.max(0, remainingMs())), undefined, { signal }).catch(() => {});
    }
    return undefined;
  } finally {
    progress.done();
  }
}

/** The finished run's report, stored; when Redis is too full to store it, finished again (backing
 * off) for `storeWithinMs`, then built here and returned unstored. */
async function finished(
  fleet: Fleet,
  parent: Job,
  options: WaitOptions,
  notice: (line: string) => void,
): Promise<RunParts> {
  const withinMs = options.storeWithinMs ?? 10_000;
  const storedReport = async () => {
    const { head } = await finishRun(fleet, parent);
    const stored = await fleet.store.parts(head.runId);
    if (!stored) throw new RunDataError(`run ${head.runId}: its stored report is gone (removed since it was stored)`);
    return stored;
  };
  let notStored: ReportNotStoredError;
  try {
    return await storedReport();
  } catch (err) {
    if (!(err instanceof ReportNotStoredError)) throw err;
    notStored = err;
  }
  const { runId } = notStored;
  notice(`run ${runId}: cannot store its report: ${notStored.message}; trying again for ${withinMs / 1000} s`);
  const until = Date.now() + withinMs;
  const backoff = new Backoff(500, 5_000);
  while (Date.now() + backoff.failed() <= until && !options.signal?.aborted) {
    await backoff.wait(options.signal);
    try {
      return await storedReport();
    } catch (err) {
      if (!isRedisFull(err)) throw err;
    }
  }
  notice(
    `run ${runId}: its report is not stored (Redis is still full); here it is as built. A coordinator stores it once Redis has room (probefleet runs show ${runId})`,
  );
  return partsOf(await buildRunInMemory(fleet, parent));
}
