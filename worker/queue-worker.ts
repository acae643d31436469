// A region's BullMQ worker: takes batches of probe jobs from that region's queue only, checks
// each batch's jobs together, and runs them one by one with executeCheckedJob, the code the
// embedded runner's executeJob calls. A batch it cannot read (too large, not JSON) or holding a
// malformed payload fails at once (UnrecoverableError), none of its jobs run, and the worker
// goes on; its jobs' results are saved with the run as they finish (worker/run-results.ts). A batch
// whose worker was lost comes back within the stall timeout and resumes after its saved jobs;
// closing is bounded whatever Redis does.
import { hostname } from 'node:os';
import { DelayedError, UnrecoverableError, WaitingError, type Job } from 'bullmq';
import { probeBatchSchema, type JobShard, type ProbeBatch } from '../contracts/job.js';
import { JOB_NAMES, JOB_STALLS_RETRIED, jobKey, regionQueueName } from '../contracts/queues.js';
import type { ProbeResult } from '../contracts/result.js';
import { bullmqKeep, DEFAULT_RETENTION, type RetentionSettings } from '../contracts/retention.js';
import { JobSignatureError, openSignedData } from '../common/job-signature.js';
import type { Logger } from '../common/log.js';
import { settlesWithin } from '../common/settle.js';
import { bullmqWorkerConnection, warnOnRedisErrors, type RedisSettings } from '../common/redis.js';
import { describeIssues, executeCheckedJob, failedResult, InvalidJobError, parseJobPayload } from './execute-job.js';
import { executeJobIsolated } from './isolated-job.js';
import { FleetWorker, LeaseLostError, refuseUnreadable, whileLeased } from './fleet-worker.js';
import { RESULTS_RETURNED, RESULTS_SAVED_EVERY_MS, RunResults, type HeldBatch } from './run-results.js';
import { ShardBarrier } from './shard-barrier.js';
import type { JobObserver, WorkerJobOutcome } from '../metrics/job-metrics.js';
import type { TargetPolicy } from './target-policy.js';

/** How long jobs being handed back on shutdown get to stop before the worker is closed hard. */
const HAND_BACK_MS = 5_000;
/** How long a worker with nothing in flight waits for Redis to see it leave; then it just goes. */
const LEAVE_MS = 2_000;

/** A job whose worker died is back in its queue within this (docs/distributed.md). */
export const DEFAULT_STALL_TIMEOUT_SECONDS = 30;

/**
 * A job of a batch of several is noted (worker/run-results.ts, markRunning) once it has run this
 * long, and the note removed when it ends: a worker lost while running it is then named on its
 * result alone. Most jobs of a big run are shorter (one request: about a millisecond), and a note
 * for each cost a worker ~150 µs of CPU and Redis ~50 µs per job in the end-to-end benchmark; a
 * worker lost in a job this short labels none.
 */
const NOTE_RUNNING_AFTER_MS = 20;

/** A shard of a job this worker holds another shard of goes back to its queue for this long, for
 * another worker of the region (shards run on workers of their own: worker/shard-barrier.ts). */
const SHARD_ELSEWHERE_MS = 250;

const stallTimeoutOf = (options: RegionWorkerOptions) => options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_SECONDS * 1000;

export interface RegionWorkerOptions {
  redis: RedisSettings;
  prefix: string;
  region: string;
  /** Jobs run at once. 1 keeps measurements from competing for the CPU. */
  concurrency: number;
  /**
   * A job whose worker died (or hung) is back in its queue within this, for a live worker of the
   * region to take. Half of it is the job's lock (renewed while the job runs), half the interval
   * of the stall check: a lock expires at most one lock after the worker's last renewal, and the
   * first check after that finds it, at most one interval later.
   * @defaultValue 30000
   */
  stallTimeoutMs?: number;
  /** How long failed jobs are kept (jobs of ours say themselves that they go once complete). */
  retention?: RetentionSettings;
  log: Logger;
  /** Told about every probe job: metrics (metrics/job-metrics.ts). */
  observer?: JobObserver;
  /** Where this worker's probes may connect. */
  targetPolicy: TargetPolicy;
  /** With a key, only jobs signed with it run (common/job-signature.ts); without, none are checked. */
  jobKey?: string;
  /** Told of every error the worker's Redis connections meet (metrics/redis-metrics.ts). */
  onRedisError?: (err: Error) => void;
}

export type CloseOutcome = 'drained' | 'handed-back' | 'abandoned';

export interface RegionWorker {
  /** Resolves when the worker is connected and taking jobs; rejects if it cannot start (a Redis of
   * another kind than its URL says: RedisKindError). */
  ready: Promise<void>;
  /** Stops taking jobs and lets the ones in flight finish for up to `graceMs`; jobs still
   * running then are stopped and put back in the queue for another worker. If Redis does not
   * answer, they cannot be put back ('abandoned'): their locks expire and the stall check of
   * another worker returns them. Ends within `graceMs` + about 10 s whatever Redis does. */
  close(graceMs: number): Promise<CloseOutcome>;
  /** The probe jobs running now: what a crash of the worker would be named after. */
  probeJobsRunning(): string[];
  /** Why the worker cannot take jobs now (Redis refuses them: full, say), or undefined: its /healthz. */
  problem(): string | undefined;
}

/**
 * A batch's data, once its signature and every one of its jobs are checked; a batch that is not
 * one, or holds a job that is not (InvalidJobError, JobSignatureError), can never run, and none of
 * its jobs starts. Its jobs are checked in one pass, before the first runs: one after another,
 * the validation's code stays hot (~30 µs of CPU less per job in batches of 50 than checking each
 * as it starts: bench/README.md, "Per job").
 */
function batchOf(data: unknown, jobKey: string | undefined): ProbeBatch {
  const parsed = probeBatchSchema.safeParse(openSignedData(data, jobKey));
  if (!parsed.success) throw new InvalidJobError(`invalid batch of probe jobs: ${describeIssues(parsed.error)}`);
  return { ...parsed.data, jobs: parsed.data.jobs.map(parseJobPayload) };
}

/** What a batch returns: the results of its jobs that are not in the run's results hash (at most
 * one: worker/run-results.ts says why). */
export interface BatchDone {
  results: ProbeResult[];
}

/**
 * Runs a batch of probe jobs, one after another: checks it (a malformed or unsigned batch fails
 * for good), skips the jobs whose results an earlier take of the batch saved, executes the others
 * and saves their results (at most every RESULTS_SAVED_EVERY_MS, and before it returns, throws or
 * hands the batch back); a last result that is the only one unsaved is returned instead
 * (worker/run-results.ts says why). The batch stops, and goes back to the queue, when the worker
 * is shutting down (`handingBack`) or its lease on the batch ends (`leaseOf`: cut off from Redis,
 * it stops before another worker can take the batch). The observer hears of each probe job it
 * runs; a batch that fails before its first job counts as one.
 */
function batchProcessor(
  options: RegionWorkerOptions,
  queueName: string,
  handingBack: AbortSignal,
  leaseOf: (jobId: string) => AbortSignal | undefined,
  runResults: RunResults,
  shardBarrier: ShardBarrier,
  inFlight: Set<string>,
) {
  const { region, log, observer } = options;
  // Two parameters: BullMQ makes an AbortController per job only for processors that declare a
  // third; the worker's `handingBack` signal and the batch's lease stop the job in flight instead.
  return async (job: Job, token: string | undefined): Promise<BatchDone> => {
    let outcome: Exclude<WorkerJobOutcome, 'completed'> = 'failed';
    let running = false;
    let runId: string | undefined;
    let unsaved: ProbeResult[] = [];
    /** The note of the job running now, once it runs past NOTE_RUNNING_AFTER_MS (see there). */
    let noteTimer: NodeJS.Timeout | undefined;
    let noted = false;
    /** The shard this batch is, once this worker holds it for its job (ShardBarrier.claim). */
    let claimed: JobShard | undefined;
    const held: HeldBatch = { jobKey: jobKey(options.prefix, queueName, job.id ?? ''), token: token ?? '' };
    const saveResults = async () => {
      const saving = unsaved;
      try {
        if (runId) await runResults.save(runId, saving, held);
        unsaved = [];
      } catch (err) {
        if (err instanceof LeaseLostError) unsaved = []; // not ours to save any more
        throw err;
      }
    };
    const stop = new AbortController();
    const lease = leaseOf(job.id ?? '');
    const leased = <T>(promise: Promise<T>) => whileLeased(promise, lease);
    const stopFor = (signal: AbortSignal) => () => stop.abort(signal.reason);
    const onHandingBack = stopFor(handingBack);
    const onLeaseLost = lease && stopFor(lease);
    for (const [signal, listener] of [
      [handingBack, onHandingBack],
      [lease, onLeaseLost],
    ] as const) {
      if (!signal || !listener) continue;
      if (signal.aborted) listener();
      else signal.addEventListener('abort', listener, { once: true });
    }
    try {
      refuseUnreadable(job, log);
      if (job.name !== JOB_NAMES.probe) {
        throw new UnrecoverableError(
          `unexpected job "${job.name}" in queue ${queueName} (only "${JOB_NAMES.probe}" jobs belong here)`,
        );
      }
      const batch = batchOf(job.data, options.jobKey);
      runId = batch.runId;
      // A shard is a batch of its own (batchesOf). With concurrency above 1 this worker may take a
      // second shard of a job whose first it holds: that one waits for another worker.
      const shard = batch.jobs[0]?.shard;
      if (shard) {
        if (!shardBarrier.claim(shard)) {
          await job.moveToDelayed(Date.now() + SHARD_ELSEWHERE_MS, token);
          throw new DelayedError();
        }
        claimed = shard;
      }
      // Taken before (its worker lost, a retry, a hand-back): what was saved then is not measured again.
      const saved =
        job.attemptsStarted > 1
          ? await leased(
              runResults.saved(
                batch.runId,
                batch.jobs.map((j) => j.jobId),
              ),
            )
          : new Map();
      // The deadline is on Redis's clock: measured against it, not against this machine's; and the
      // results' times are put on it, so that a run's times agree whatever each worker's clock says.
      const redisAheadMs = Math.round(await leased(runResults.redisClockAheadMs()));
      const deadline = Date.parse(batch.deadline) - redisAheadMs;
      const onRedisClock = (result: ProbeResult): ProbeResult =>
        redisAheadMs === 0
          ? result
          : {
              ...result,
              startedAt: new Date(Date.parse(result.startedAt) + redisAheadMs).toISOString(),
              finishedAt: new Date(Date.parse(result.finishedAt) + redisAheadMs).toISOString(),
            };
      const lostBefore = job.stalledCounter > 0;
      // The job its lost worker was running: the one whose result says the worker was lost (in a
      // batch of several, the one it noted; none if it was lost in a job shorter than the note's wait).
      const lostWhileRunning = !lostBefore
        ? undefined
        : batch.jobs.length > 1
          ? await leased(runResults.runningWhenLost(held.jobKey))
          : batch.jobs[0]?.jobId;
      let savedAt = Date.now();
      for (const [i, probeJob] of batch.jobs.entries()) {
        if (saved.has(probeJob.jobId)) continue;
        if (Date.now() >= deadline) {
          // The run has stopped waiting: what is left of the batch is reported as not run.
          log.info(
            { jobId: job.id, jobs: batch.jobs.length - i, deadline: batch.deadline },
            'run deadline passed: the rest of the batch is not run',
          );
          break;
        }
        if (stop.signal.aborted) break;
        // A shard starts with the other shards of its job, or not at all (worker/shard-barrier.ts).
        const startedAt = new Date();
        const apart = probeJob.shard
          ? await leased(shardBarrier.startTogether(probeJob, probeJob.shard, stop.signal))
          : undefined;
        if (stop.signal.aborted) break;
        observer?.started();
        running = true;
        // Settles by the job's time bound (plus a grace for a probe that overruns it); a job for
        // another region is refused (InvalidJobError). A batch whose worker was lost may hold the
        // job that killed it: each of its jobs runs in a process of its own, so that job kills at
        // most that process (a KILLED_WORKER result), and each result is saved as it comes.
        if (lostBefore)
          log.warn(
            {
              jobId: job.id,
              probeJobId: probeJob.jobId,
              target: probeJob.target.name,
              workersLost: job.stalledCounter,
            },
            "running in a process of its own: this batch's last worker was lost while running it",
          );
        inFlight.add(probeJob.jobId);
        if (batch.jobs.length > 1)
          noteTimer = setTimeout(() => {
            runResults.markRunning(held, probeJob.jobId, probeJob.timeLimitMs + 2 * stallTimeoutOf(options));
            noted = true;
          }, NOTE_RUNNING_AFTER_MS);
        const result = apart
          ? failedResult(probeJob, region, startedAt, apart)
          : lostBefore
            ? await executeJobIsolated(probeJob, {
                region,
                log,
                signal: stop.signal,
                policy: options.targetPolicy.settings,
              })
            : await executeCheckedJob(probeJob, {
                region,
                log,
                signal: stop.signal,
                targetPolicy: options.targetPolicy,
              });
        clearTimeout(noteTimer);
        inFlight.delete(probeJob.jobId);
        // Stopped: this measurement was cut short, and is measured again by whoever takes the batch.
        if (stop.signal.aborted) break;
        if (noted) {
          runResults.doneRunning(held);
          noted = false;
        }
        observer?.completed(result);
        running = false;
        // The job its worker was lost while running: the report says so.
        const onClock = onRedisClock(result);
        unsaved.push(probeJob.jobId === lostWhileRunning ? { ...onClock, workersLost: job.stalledCounter } : onClock);
        if (lostBefore || Date.now() - savedAt >= RESULTS_SAVED_EVERY_MS) {
          await leased(saveResults());
          savedAt = Date.now();
        }
      }
      if (lease?.aborted) throw lease.reason;
      if (stop.signal.aborted) {
        outcome = 'handed_back';
        await handBack(job, token, undefined, saveResults, log);
      }
      if (unsaved.length > RESULTS_RETURNED) await leased(saveResults());
      return { results: unsaved };
    } catch (err) {
      if (err instanceof DelayedError) throw err; // nothing of it ran: another worker takes it
      const leaseLost = err instanceof LeaseLostError;
      if (leaseLost) outcome = 'lease_lost';
      if (!running) observer?.started();
      observer?.ended(outcome);
      // Not this worker's any more, or maybe not: handed back if it still is, else left to whoever has it.
      if (leaseLost) return handBack(job, token, err, saveResults, log);
      // What was measured stays measured: a retry resumes after it, a failed batch reports it (a
      // batch handed back has saved its results already, or given up on Redis).
      if (unsaved.length > 0 && !(err instanceof WaitingError))
        await saveResults().catch((saveErr: Error) =>
          log.warn({ jobId: job.id, err: saveErr.message }, 'cannot save the results of a failing batch'),
        );
      if (err instanceof InvalidJobError || err instanceof JobSignatureError) {
        log.warn({ jobId: job.id, reason: err.message }, 'job failed for good');
        throw new UnrecoverableError(err.message);
      }
      throw err; // anything else is transient: retried with backoff (attempts set when added)
    } finally {
      if (claimed) shardBarrier.release(claimed);
      clearTimeout(noteTimer);
      // Not a batch given up: its note may be the next worker's by now.
      if (noted && !lease?.aborted) runResults.doneRunning(held);
      handingBack.removeEventListener('abort', onHandingBack);
      if (lease && onLeaseLost) lease.removeEventListener('abort', onLeaseLost);
    }
  };
}

/**
 * Puts a stopped batch back in its queue, its results so far saved, and ends its processing
 * (WaitingError: nothing more for BullMQ to record). Stopped for shutdown, it goes back at once.
 * Stopped because its lease ended (`leaseLost`), both writes are fenced by its lock: they are made
 * if the batch is still this worker's, refused if another worker took it, and wait for a Redis that
 * is away for at most HAND_BACK_MS (then its lock expires and a stall check returns it).
 */
async function handBack(
  job: Job,
  token: string | undefined,
  leaseLost: unknown,
  saveResults: () => Promise<void>,
  log: Logger,
): Promise<never> {
  if (!leaseLost) {
    await saveResults();
    await job.moveToWait(token);
    log.info({ jobId: job.id }, 'job handed back to the queue');
    throw new WaitingError();
  }
  const reason = leaseLost instanceof Error ? leaseLost.message : String(leaseLost);
  let problem: string | undefined;
  const handingBack = (async () => {
    await saveResults();
    await job.moveToWait(token);
  })().catch((err: Error) => (problem = err.message));
  const answered = await settlesWithin(handingBack, HAND_BACK_MS);
  log.warn(
    {
      jobId: job.id,
      reason,
      handedBack: answered && !problem,
      ...(problem ? { problem } : answered ? {} : { problem: `Redis did not answer within ${HAND_BACK_MS} ms` }),
    },
    "batch stopped: this worker's hold on it ended (the reason says why); the job in flight is measured again by whoever takes the batch",
  );
  throw new WaitingError();
}

export function startRegionWorker(options: RegionWorkerOptions): RegionWorker {
  const { region, log } = options;
  const queueName = regionQueueName(region);
  // Aborted when jobs still running at shutdown are stopped and handed back to the queue.
  const handingBack = new AbortController();

  const retention = options.retention ?? DEFAULT_RETENTION;
  // Its worker's connection, once the worker below exists (a batch starts after that).
  const runResults = new RunResults(() => worker.getBackend().client, options.prefix, retention.jobs.maxAgeSeconds);
  const workerName = `${hostname()}-${process.pid}`;
  const shardBarrier = new ShardBarrier(() => worker.getBackend().client, options.prefix, workerName);
  const inFlight = new Set<string>();
  const processor = batchProcessor(
    options,
    queueName,
    handingBack.signal,
    (jobId) => worker.leaseOf(jobId),
    runResults,
    shardBarrier,
    inFlight,
  );
  const stallTimeoutMs = stallTimeoutOf(options);
  const keepFailed = bullmqKeep(retention.jobs);
  const worker = new FleetWorker(queueName, processor, {
    connection: bullmqWorkerConnection(options.redis),
    prefix: options.prefix,
    concurrency: options.concurrency,
    lockDuration: stallTimeoutMs / 2,
    stalledInterval: stallTimeoutMs / 2,
    maxStalledCount: JOB_STALLS_RETRIED,
    removeOnFail: keepFailed,
    removeOnComplete: keepFailed,
    name: workerName,
  });
  // executeJob's 'probe finished' line (debug; info for a failed probe) already says how each job went.
  worker.on('completed', (job) => log.debug({ jobId: job.id }, 'job completed'));
  worker.on('failed', (job, err) =>
    log.warn({ jobId: job?.id, attempt: job?.attemptsMade, reason: err.message }, 'job failed'),
  );
  // This worker's stall check found a job whose worker stopped renewing its lock.
  worker.on('stalled', (jobId) =>
    log.warn(
      { jobId, stallTimeoutMs },
      'job stalled: the worker running it was lost (killed, hung or cut off from Redis); it is back in the queue',
    ),
  );
  warnOnRedisErrors(worker, log, 'worker', options.onRedisError);

  const ready = worker.start(options.redis).then(() => {
    log.info(
      { queue: queueName, prefix: options.prefix, concurrency: options.concurrency, stallTimeoutMs },
      'worker ready',
    );
  });
  ready.catch((err: Error) => log.error({ err: err.message }, 'worker could not start'));

  return {
    ready,
    probeJobsRunning: () => [...inFlight],
    problem: () => worker.takeProblem,
    async close(graceMs) {
      // With nothing in flight there is nothing to wait for but Redis saying goodbye.
      if (await settlesWithin(worker.close(), worker.held > 0 ? graceMs : LEAVE_MS)) return 'drained';
      if (worker.held > 0) {
        log.warn({ graceMs, jobs: worker.held }, 'jobs still running after the grace period: handing them back');
        handingBack.abort('worker shutting down');
        if (await settlesWithin(worker.close(), HAND_BACK_MS)) return 'handed-back';
      }
      const unfinished = worker.held;
      await worker.closeWithin(0, log);
      if (unfinished > 0)
        log.warn(
          { jobs: unfinished },
          'Redis does not answer: jobs in flight could not be handed back; another worker takes them after the stall timeout',
        );
      return unfinished > 0 ? 'abandoned' : 'drained';
    },
  };
}
