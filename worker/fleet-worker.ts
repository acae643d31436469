// The BullMQ Worker that every long-running process of a fleet runs (a region's worker, the
// coordinator's worker of the runs queue), with five things BullMQ leaves to us: it starts only
// on a Redis of the kind its URL says, job data that cannot be read fails at once instead of
// hanging in `active`, each job held has a lease that ends before its lock could have expired in
// Redis (so a worker cut off from Redis stops before another takes the job), taking jobs backs off
// while Redis refuses it, and closing ends whatever Redis does.
import { performance } from 'node:perf_hooks';
import {
  createIORedisClient,
  RedisConnection,
  UnrecoverableError,
  Worker,
  type Job,
  type JobJson,
  type Processor,
  type WorkerOptions,
} from 'bullmq';
import type { JobFailureCode } from '../contracts/job.js';
import { JOB_LIMITS } from '../contracts/limits.js';
import type { Logger } from '../common/log.js';
import { reconnectWhenCutShort, refuseOtherRedis, type RedisClient, type RedisSettings } from '../common/redis.js';
import { requireCommonJs } from '../common/require-commonjs.js';
import { Backoff, redisErrorKind } from '../common/redis-errors.js';
import { settlesWithin } from '../common/settle.js';

const ioredis = requireCommonJs('ioredis') as typeof import('ioredis');

// BullMQ makes a worker's connections (its blocking one too) from our options, and through this
// each connects again when ioredis ends it in a failover (reconnectWhenCutShort).
RedisConnection.clientFactory = ({ url, ...options }) =>
  createIORedisClient(reconnectWhenCutShort(url ? new ioredis.Redis(url, options) : new ioredis.Redis(options)));

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

/** Why a job's lease ended: the worker can no longer be sure that it holds the job. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/** The promise's outcome, or the lease's LeaseLostError if the lease ends first: a job whose lease
 * ended does not wait for a Redis that may never answer (what it sent stays fenced, run-results.ts). */
export function whileLeased<T>(promise: Promise<T>, lease: AbortSignal | undefined): Promise<T> {
  if (!lease) return promise;
  if (lease.aborted) return Promise.reject(lease.reason);
  let onLost: () => void = () => {};
  const lost = new Promise<never>((_, reject) => {
    onLost = () => reject(lease.reason);
    lease.addEventListener('abort', onLost, { once: true });
  });
  return Promise.race([promise, lost]).finally(() => lease.removeEventListener('abort', onLost));
}

/**
 * A worker's hold on one job: it lasts until shortly before the job's lock could expire in Redis,
 * counted from when the command that set or renewed the lock was sent (Redis ran it later, so the
 * lock expires later still). Renewals move it on; a renewal Redis refuses, or none answered in
 * time (Redis away, the worker cut off), ends it, and its signal aborts: the job is stopped before
 * another worker's stall check can take it, so no job is measured by two workers at once.
 */
class JobLease {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** Until when (performance.now()) the lease holds. */
    until: number,
    private readonly describeExpiry: () => string,
  ) {
    this.extend(until);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  extend(until: number): void {
    if (this.controller.signal.aborted) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.lose(this.describeExpiry()), Math.max(0, until - performance.now()));
  }

  lose(why: string): void {
    clearTimeout(this.timer);
    if (!this.controller.signal.aborted) this.controller.abort(new LeaseLostError(why));
  }

  end(): void {
    clearTimeout(this.timer);
  }
}

export class FleetWorker extends Worker {
  /** Jobs taken and not yet recorded as done in Redis (recording a result needs Redis too). */
  held = 0;
  private readonly leases = new Map<string, JobLease>();
  private readonly lockMs: number;
  /** Why taking jobs backs off now (Redis refused the last take), or undefined. */
  takeProblem: string | undefined;
  private readonly takes = new Backoff();
  /** Aborted as closing starts: a take waiting out its backoff stops waiting. */
  private readonly leaving = new AbortController();

  /** A job's data longer than this is failed unread (JOB_DATA_TOO_LARGE). */
  private readonly maxDataChars: number;

  /** Takes no job before `start`. `maxDataChars`: the longest job data it reads (@defaultValue
   * JOB_LIMITS.jobDataChars; the coordinator's runs queue: JOB_LIMITS.runDataChars). */
  constructor(name: string, processor: Processor, options: WorkerOptions & { maxDataChars?: number }) {
    // BullMQ's default lock; renewed every sixth to third of it (BullMQ's default: quarter to half),
    // so that a renewal answered late still comes well before the lease ends (leaseMarginMs).
    const { maxDataChars = JOB_LIMITS.jobDataChars, ...workerOptions } = options;
    const lockDuration = workerOptions.lockDuration ?? 30_000;
    super(name, processor, {
      ...workerOptions,
      lockDuration,
      lockRenewTime: workerOptions.lockRenewTime ?? lockDuration / 3,
      autorun: false,
    });
    this.maxDataChars = maxDataChars;
    this.lockMs = lockDuration;
    this.once('closing', () => this.leaving.abort());
  }

  /** How long before its lock could expire a job's lease ends: time for the job to stop. A
   * renewal is sent every third of the lock at most (lockRenewTime), so a quarter of the lock
   * leaves the answer to a renewal as long again before the lease would end. */
  private get leaseMarginMs(): number {
    return this.lockMs / 4;
  }

  /**
   * Starts taking jobs once Redis answers (waiting out a Redis that is down, as BullMQ does) and is
   * what its URL names: a Cluster node reached with a single-server URL, or a server without the
   * URL's database, is refused (RedisKindError) before any job is asked for.
   */
  async start(redis: RedisSettings): Promise<void> {
    await this.waitUntilReady();
    // BullMQ's ioredis adapter is the ioredis client itself, its interface added.
    await refuseOtherRedis(redis, (await this.getBackend().client) as unknown as RedisClient);
    this.run().catch((err: Error) => this.emit('error', err));
  }

  /**
   * Taking a job is a write (BullMQ's moveToActive script). When Redis refuses it (full, or a
   * replica after a failover), BullMQ asks again at once: thousands of failing scripts a second
   * and a busy CPU. Here each try after a refusal waits, 1 s doubling up to 30 s, until one
   * succeeds. A lost connection is not a refusal: BullMQ waits for the reconnect itself.
   */
  protected override async moveToActive(token: string, name?: string): Promise<Job> {
    await this.takes.wait(this.leaving.signal);
    // Closing ended the wait: take nothing more (BullMQ reads no job as none being waiting).
    if (this.leaving.signal.aborted) return undefined as unknown as Job;
    try {
      const job = await super.moveToActive(token, name);
      this.takes.succeeded();
      this.takeProblem = undefined;
      return job;
    } catch (err) {
      if (redisErrorKind(err) !== 'connection') {
        const waitMs = this.takes.failed();
        this.takeProblem = `Redis refused to hand out a job (${(err as Error).message}); trying again every ${waitMs / 1000} s`;
      }
      throw err;
    }
  }

  override async processJob(job: Job, token: string, fetchNext?: () => boolean): ReturnType<Worker['processJob']> {
    this.held++;
    // The lock was set when the command that took the job was sent (processedOn), or later.
    const lockedFor = (job.processedOn ?? Date.now()) + this.lockMs - Date.now();
    const lease = new JobLease(
      performance.now() + lockedFor - this.leaseMarginMs,
      () =>
        `no renewal of its lock was answered in time (the lock lasts ${this.lockMs} ms): Redis is away or this worker is cut off from it; stopped before the lock can expire`,
    );
    if (job.id) this.leases.set(job.id, lease);
    try {
      return await super.processJob(job, token, fetchNext);
    } finally {
      this.held--;
      lease.end();
      if (job.id) this.leases.delete(job.id);
    }
  }

  /** Aborts, with a LeaseLostError, when this worker may no longer hold the job (see JobLease). */
  leaseOf(jobId: string): AbortSignal | undefined {
    return this.leases.get(jobId)?.signal;
  }

  /** BullMQ's lock renewal (its LockManager calls this): each renewal Redis accepts extends the
   * job's lease from when it was sent; one it refuses ends it. */
  override async extendJobLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
    const sentAt = performance.now();
    const refused = await super.extendJobLocks(jobIds, tokens, duration);
    for (const jobId of jobIds) {
      const lease = this.leases.get(jobId);
      if (refused.includes(jobId))
        lease?.lose('Redis refused to renew its lock: it expired, or another worker holds it now');
      else lease?.extend(sentAt + duration - this.leaseMarginMs);
    }
    return refused;
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
    if (json.data.length > this.maxDataChars)
      return refuse(
        'JOB_DATA_TOO_LARGE',
        `the job's data is ${json.data.length} characters, over the cap of ${this.maxDataChars}; not read`,
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
    // A connection that never reached Redis is cut by a forced close (disconnecting waits for it to
    // be ready, which it never is); one that did, by disconnecting (its QUIT would wait for Redis).
    await settlesWithin(Promise.allSettled([this.backend.close(true), this.disconnect()]), LEAVE_MS);
    return false;
  }
}
