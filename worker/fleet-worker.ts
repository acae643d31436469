// The BullMQ Worker that every long-running process of a fleet runs (a region's worker, the
// coordinator's worker of the runs queue), with three things BullMQ leaves to us: it starts only
// on a Redis of the kind its URL says, job data that cannot be read fails at once instead of
// hanging in `active`, and closing ends whatever Redis does.
import { UnrecoverableError, Worker, type Job, type JobJson, type Processor, type WorkerOptions } from 'bullmq';
import type { JobFailureCode } from '../contracts/job.js';
import { JOB_LIMITS } from '../contracts/limits.js';
import type { Logger } from '../common/log.js';
import { refuseOtherKind, type RedisSettings } from '../common/redis.js';
import { settlesWithin } from '../common/settle.js';

/** How long each step of leaving without Redis may take: BullMQ's close, cutting the connections. */
const LEAVE_MS = 2_000;

/** Why a job's data could not be read, kept beside the job for the processor to fail it with. */
const unreadable = new WeakMap<Job, string>();

/** Fails a job whose data could not be read, for good; a processor calls it first. */
export function refuseUnreadable(job: Job, log: Logger): void {
  const problem = unreadable.get(job);
  if (!problem) return;
  log.warn({ jobId: job.id, reason: problem }, 'job failed for good');
  throw new UnrecoverableError(problem);
}

export class FleetWorker extends Worker {
  /** Jobs taken and not yet recorded as done in Redis (recording a result needs Redis too). */
  held = 0;

  /** Takes no job before `start`. */
  constructor(name: string, processor: Processor, opts: WorkerOptions) {
    super(name, processor, { ...opts, autorun: false });
  }

  /**
   * Starts taking jobs once Redis answers (waiting out a Redis that is down, as BullMQ does) and is
   * of the kind its URL says: a Cluster node reached with a single-server URL is refused
   * (RedisKindError) before any job is asked for, rather than answering MOVED to every try.
   */
  async start(redis: RedisSettings): Promise<void> {
    await this.waitUntilReady();
    refuseOtherKind(redis, await (await this.getBackend().client).info());
    this.run().catch((err: Error) => this.emit('error', err));
  }

  override async processJob(job: Job, token: string, fetchNext?: () => boolean): ReturnType<Worker['processJob']> {
    this.held++;
    try {
      return await super.processJob(job, token, fetchNext);
    } finally {
      this.held--;
    }
  }

  /**
   * BullMQ parses a job's data when it takes the job, before the processor sees it: a job of 50 MB
   * would be parsed whole (hundreds of MB) before anything could refuse it, and data that is not
   * JSON made BullMQ throw there, leaving the job active with nothing to fail it. Here the size
   * is checked first and a parse error kept; the processor fails both (refuseUnreadable).
   */
  protected override createJob(json: JobJson, jobId: string): Job {
    const refuse = (code: JobFailureCode, why: string) => {
      const job = super.createJob({ ...json, data: 'null' }, jobId);
      unreadable.set(job, `${code}: ${why}`);
      return job;
    };
    if (json.data.length > JOB_LIMITS.jobDataChars)
      return refuse(
        'JOB_DATA_TOO_LARGE',
        `the job's data is ${json.data.length} characters, over the cap of ${JOB_LIMITS.jobDataChars}; not read`,
      );
    try {
      return super.createJob(json, jobId);
    } catch (err) {
      return refuse('JOB_DATA_NOT_JSON', `the job's data is not JSON (${(err as Error).message})`);
    }
  }

  /**
   * Closes within `graceMs` for the jobs in flight to finish; true when it did. Otherwise (Redis
   * does not answer) it leaves: BullMQ's close waits for Redis before it stops the lock renewal
   * and the stall check, whose timers would keep the process alive, so those are stopped here
   * and the connections cut. Jobs it held come back through another worker's stall check.
   */
  async closeWithin(graceMs: number, log: Logger): Promise<boolean> {
    if (await settlesWithin(this.close(), graceMs)) {
      // A connection whose QUIT failed goes on reconnecting: cut them all (a no-op once closed).
      await settlesWithin(this.disconnect(), LEAVE_MS);
      return true;
    }
    log.warn('Redis does not answer: leaving without saying goodbye');
    await settlesWithin(this.pause(true), LEAVE_MS);
    await this.lockManager.close();
    await settlesWithin(this.disconnect(), LEAVE_MS);
    return false;
  }
}
