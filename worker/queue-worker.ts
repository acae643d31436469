// A region's BullMQ worker: takes jobs from that region's queue only and runs each with
// executeJob, the same code the embedded runner calls. A malformed payload fails at once
// (UnrecoverableError) and the worker goes on; the probe result is the job's return value.
import { hostname } from 'node:os';
import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import { JOB_NAMES, regionQueueName } from '../contracts/queues.js';
import type { ProbeResult } from '../contracts/result.js';
import { JobSignatureError, openSignedData } from '../common/job-signature.js';
import type { Logger } from '../common/log.js';
import { settlesWithin } from '../common/settle.js';
import { bullmqConnection, type RedisSettings } from '../common/redis.js';
import { executeJob, InvalidJobError, parseJobPayload } from './execute-job.js';
import { observeJobs, type JobObserver } from './metrics/job-metrics.js';
import type { TargetPolicy } from './target-policy.js';

/** How long jobs being handed back on shutdown get to stop before the worker is closed hard. */
const HAND_BACK_MS = 5_000;

export interface RegionWorkerOptions {
  redis: RedisSettings;
  prefix: string;
  region: string;
  /** Jobs run at once. 1 keeps measurements from competing for the CPU. */
  concurrency: number;
  /** How often the worker looks for jobs whose worker died, and how long a job's lock lasts
   * without renewal: a job whose worker died is taken again within about two intervals.
   * @defaultValue 30000 (BullMQ's default) */
  stalledIntervalMs?: number;
  log: Logger;
  /** Told about every job: metrics (worker/metrics/job-metrics.ts). */
  observer?: JobObserver;
  /** Where this worker's probes may connect. */
  targetPolicy: TargetPolicy;
  /** With a key, only jobs signed with it run (common/job-signature.ts); without, none are checked. */
  jobKey?: string;
}

export interface RegionWorker {
  /** Resolves when the worker is connected and taking jobs. */
  ready: Promise<void>;
  /** Stops taking jobs and lets the ones in flight finish for up to `graceMs`; jobs still
   * running then are stopped and put back in the queue for another worker. */
  close(graceMs: number): Promise<'drained' | 'handed-back'>;
}

export function startRegionWorker(options: RegionWorkerOptions): RegionWorker {
  const { region, log } = options;
  const queueName = regionQueueName(region);
  let handingBack = false;

  // Three parameters: BullMQ passes the abort signal only to processors that declare it.
  const processor = async (
    job: Job,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<ProbeResult> => {
    if (job.name !== JOB_NAMES.probe) {
      throw new UnrecoverableError(
        `unexpected job "${job.name}" in queue ${queueName} (only "${JOB_NAMES.probe}" jobs belong here)`,
      );
    }
    let result: ProbeResult;
    try {
      const payload = parseJobPayload(openSignedData(job.data, options.jobKey));
      // executeJob settles by the job's time bound (plus a grace for a probe that overruns it).
      result = await executeJob(payload, { region, log, signal, targetPolicy: options.targetPolicy });
    } catch (err) {
      if (err instanceof InvalidJobError || err instanceof JobSignatureError) {
        log.warn({ jobId: job.id, reason: err.message }, 'job failed for good');
        throw new UnrecoverableError(err.message);
      }
      throw err; // anything else is transient: retried with backoff (attempts set when added)
    }
    if (handingBack && signal?.aborted) {
      // Shutting down: this measurement was cut short; another worker runs it whole.
      await job.moveToWait(token);
      log.info({ jobId: job.id }, 'job handed back to the queue');
      throw new WaitingError();
    }
    return result;
  };

  const stalledInterval = options.stalledIntervalMs ?? 30_000;
  const worker = new Worker(queueName, options.observer ? observeJobs(processor, options.observer) : processor, {
    connection: bullmqConnection(options.redis),
    prefix: options.prefix,
    concurrency: options.concurrency,
    stalledInterval,
    lockDuration: stalledInterval,
    maxStalledCount: 1,
    name: `${hostname()}-${process.pid}`,
  });
  worker.on('completed', (job) => log.info({ jobId: job.id }, 'job completed'));
  worker.on('failed', (job, err) =>
    log.warn({ jobId: job?.id, attempt: job?.attemptsMade, reason: err.message }, 'job failed'),
  );
  // Without a listener an 'error' (e.g. Redis going away) would end the process.
  worker.on('error', (err) => log.warn({ err: err.message }, 'worker error (reconnecting)'));

  const ready = worker.waitUntilReady().then(() => {
    log.info(
      { queue: queueName, prefix: options.prefix, concurrency: options.concurrency, stalledInterval },
      'worker ready',
    );
  });
  ready.catch((err: Error) => log.error({ err: err.message }, 'worker could not start'));

  return {
    ready,
    async close(graceMs) {
      const closing = worker.close();
      if (await settlesWithin(closing, graceMs)) return 'drained';
      handingBack = true;
      log.warn({ graceMs }, 'jobs still running after the grace period: handing them back');
      worker.cancelAllJobs('worker shutting down');
      if (!(await settlesWithin(closing, HAND_BACK_MS))) await worker.close(true);
      return 'handed-back';
    },
  };
}
