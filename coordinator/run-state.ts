// What Redis holds of a run, read at one instant so that no batch is seen between two places:
// whether its parent job is there and waiting, whether its submission gate is, and each of its
// batches pending (a child the parent waits for), done (completed or failed for good, on the
// parent), or neither: missing. Before the run's deadline a missing batch was never added (a submit
// cut off) or its write was lost (a failover to a replica that had not received it, a restart
// without persistence); at the deadline the unfinished ones are taken off on purpose. Progress
// counts what is there, so a lost batch shows as lost, never as done.
import { batchesOf, type BatchOf } from '../contracts/job.js';
import {
  jobKey,
  parseJobKey,
  regionQueueName,
  reportKeys,
  RUNS_QUEUE,
  SUBMISSIONS_QUEUE,
} from '../contracts/queues.js';
import type { JobRef } from '../contracts/result.js';
import { type RunJobData, runJobRefs } from '../contracts/run-job.js';
import { msOfRedisTime } from '../common/redis.js';
import type { Fleet } from './fleet.js';

/** Cut once per run's data: a wait reads the run's state twice a second, and a big run has
 * thousands of batches. */
const batchesOfData = new WeakMap<RunOfJobs, Map<string, BatchOf<JobRef>>>();
type RunOfJobs = Pick<RunJobData, 'runId' | 'jobs' | 'jobsPerBatch'>;

/** The run's batches by id, as its submit cut them (the same ids from job refs or payloads). */
export function batchesById(data: RunOfJobs): Map<string, BatchOf<JobRef>> {
  let batches = batchesOfData.get(data);
  if (!batches) {
    batches = new Map(batchesOf(runJobRefs(data), data.jobsPerBatch).map((batch) => [batch.id, batch]));
    batchesOfData.set(data, batches);
  }
  return batches;
}

export interface RunState {
  /** The run's parent job is in Redis. */
  parent: boolean;
  /** The parent waits for its children (BullMQ's waiting-children): the run is not over. */
  waiting: boolean;
  /** Its submission gate is there: a submit has not finished, or the write that ended it was lost. */
  gated: boolean;
  /** Now, on Redis's clock. */
  now: number;
  /** Whether the run's deadline has passed (on Redis's clock): missing batches were taken off, not lost. */
  pastDeadline: boolean;
  /** Batch ids the parent still waits for. */
  pending: Set<string>;
  /** Batch ids done: completed, or failed for good. */
  done: Set<string>;
  /** Batches of the run neither pending nor done. */
  missing: BatchOf<JobRef>[];
}

/** The reads of readRunState in one script: atomic like a transaction, and unlike one (whose
 * queued commands a full Redis refuses, reads included) readable while Redis is full. */
const READ_RUN_STATE = `
local waiting = redis.call('ZSCORE', KEYS[2], ARGV[1])
return {
  redis.call('EXISTS', KEYS[1]),
  waiting and 1 or 0,
  redis.call('EXISTS', KEYS[3]),
  redis.call('SMEMBERS', KEYS[4]),
  redis.call('HKEYS', KEYS[5]),
  redis.call('HKEYS', KEYS[6]),
  redis.call('TIME'),
}`;

export async function readRunState(fleet: Fleet, data: RunJobData): Promise<RunState> {
  const { prefix } = fleet;
  const parentKey = jobKey(prefix, RUNS_QUEUE, data.runId);
  const keys = [
    parentKey,
    `${prefix}:${RUNS_QUEUE}:waiting-children`,
    jobKey(prefix, SUBMISSIONS_QUEUE, data.runId),
    `${parentKey}:dependencies`,
    `${parentKey}:processed`,
    `${parentKey}:failed`,
  ];
  const [exists, waiting, gate, dependencies, processed, failed, time] = (await fleet.client.eval(
    READ_RUN_STATE,
    keys.length,
    ...keys,
    data.runId,
  )) as [number, number, number, string[], string[], string[], [string, string]];
  const idsIn = (keys: string[]) => new Set(keys.flatMap((key) => parseJobKey(prefix, key)?.jobId ?? []));
  const pending = idsIn(dependencies);
  const done = new Set([...idsIn(processed), ...idsIn(failed)]);
  const now = msOfRedisTime(time);
  return {
    parent: exists === 1,
    waiting: waiting === 1,
    gated: gate === 1,
    now,
    pastDeadline: now >= Date.parse(data.deadline),
    pending,
    done,
    missing: [...batchesById(data).values()].filter((batch) => !pending.has(batch.id) && !done.has(batch.id)),
  };
}

/** Jobs of a region: done (a saved result, or in a batch done), pending, or lost (in a missing batch
 * before the deadline). */
export interface RegionCount {
  done: number;
  pending: number;
  lost: number;
}

/**
 * Per region, how many of the run's jobs are done, pending or lost. A pending batch that a worker
 * has taken may have saved some of its jobs' results already (worker/run-results.ts): those count as
 * done. Reads Redis for those batches only, after the transaction: a result saved meanwhile is
 * counted at the next reading.
 */
export async function countJobs(fleet: Fleet, data: RunJobData, state: RunState): Promise<Map<string, RegionCount>> {
  const counts = new Map<string, RegionCount>();
  const countOf = (region: string) => {
    const count = counts.get(region) ?? { done: 0, pending: 0, lost: 0 };
    counts.set(region, count);
    return count;
  };
  const taken: BatchOf<JobRef>[] = [];
  const pendingBatches: BatchOf<JobRef>[] = [];
  for (const batch of batchesById(data).values()) {
    const count = countOf(batch.region);
    if (state.done.has(batch.id)) count.done += batch.jobs.length;
    else if (state.pending.has(batch.id)) pendingBatches.push(batch);
    else if (!state.pastDeadline) count.lost += batch.jobs.length;
  }
  // A batch of one job saves no result of its own before it completes (it returns it).
  const multiJob = pendingBatches.filter((batch) => batch.jobs.length > 1);
  if (multiJob.length > 0) {
    const read = fleet.client.pipeline();
    for (const batch of multiJob)
      read.hexists(jobKey(fleet.prefix, regionQueueName(batch.region), batch.id), 'processedOn');
    const replies = (await read.exec()) ?? [];
    multiJob.forEach((batch, i) => {
      if (replies[i]?.[1] === 1) taken.push(batch);
    });
  }
  const jobIds = taken.flatMap((batch) => batch.jobs.map((job) => job.jobId));
  const saved = new Set<string>();
  if (jobIds.length > 0) {
    const values = await fleet.client.hmget(reportKeys.results(fleet.prefix, data.runId), ...jobIds);
    values.forEach((value, i) => {
      if (value !== null) saved.add(jobIds[i]!);
    });
  }
  for (const batch of pendingBatches) {
    const count = countOf(batch.region);
    const savedHere = batch.jobs.filter((job) => saved.has(job.jobId)).length;
    count.done += savedHere;
    count.pending += batch.jobs.length - savedHere;
  }
  return counts;
}
