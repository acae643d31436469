// A run in Redis: one parent "run" job on the runs queue whose children are the plan's jobs in
// batches, each batch one BullMQ job in its region's queue (BullMQ's parent/child dependencies: the
// parent is processed once every child is done). The parent goes in first with one child of its
// own, the run's submission gate, which holds it waiting; the batches follow (Queue.addBulk, a few
// calls in flight), and removing the gate lets the parent go once its jobs are done. One flow of
// 100,000 children is one transaction built whole in memory (1.65 GB, 6–7k jobs/s); a BullMQ job
// per probe job costs Redis one add script each (~17k jobs/s); batches of probe jobs cost it one
// per batch (docs/decisions/010-submitting-behind-a-gate.md, 011-batches-of-probe-jobs.md). Ids
// are deterministic (coordinator/split.ts, batchesOf), so submitting the same run again adds
// nothing twice; submitting another plan under an existing run id is refused.
//
// A submit is done when Redis holds the parent and every batch (or its result) and the gate is
// gone, confirmed by Redis's replicas (WAIT), so that a failover right after loses none of it. It
// checks that, and adds what is missing: a submit cut off (Redis full, a connection lost), or writes
// a failover lost, is completed by the next submit of the same run id, which says what it added.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FlowJob } from 'bullmq';
import { Cluster } from 'ioredis';
import { JOB_NAMES, reportKeys, RUNS_QUEUE, SUBMISSIONS_QUEUE } from '../contracts/queues.js';
import {
  batchesOf,
  jobsPerRegion,
  PROBE_BATCH_SCHEMA,
  type BatchOf,
  type JobPayload,
  type ProbeBatch,
} from '../contracts/job.js';
import { JOB_LIMITS } from '../contracts/limits.js';
import type { Plan } from '../contracts/plan.js';
import type { JobRef, RunReport } from '../contracts/result.js';
import { RUN_JOB_SCHEMA, type RunJobData, runJobsOf } from '../contracts/run-job.js';
import { BadInputError } from '../common/bad-input.js';
import { signData } from '../common/job-signature.js';
import { connectedReplicas, redisNow } from '../common/redis.js';
import { isRedisFull, redisErrorKind, redisFullError } from '../common/redis-errors.js';
import type { Fleet } from './fleet.js';
import type { LoadedPlan } from './loaded-plan.js';
import { runDataOf } from './run-finisher.js';
import { planDifferences, redactPlan } from './run-report.js';
import { readRunState } from './run-state.js';
import { splitPlan, TooManyJobsError } from './split.js';
import { thousands } from '../common/plural.js';

/** Transient failures (not a target's error, which is a result) are retried this often. */
const JOB_ATTEMPTS = 3;
const RETRY_BACKOFF = { type: 'exponential', delay: 2_000 } as const;

/** Slack on top of the jobs' own time bounds before a run stops waiting for its regions. */
export const DEADLINE_SLACK_SECONDS = 60;

/** A region's worker (concurrency 1) runs its jobs one after another, each within the plan's
 * time bound: the run cannot need longer than the busiest region's jobs times that bound. */
export function defaultDeadlineSeconds(jobs: JobPayload[], jobTimeoutSeconds: number): number {
  return Math.max(...jobsPerRegion(jobs).values()) * jobTimeoutSeconds + DEADLINE_SLACK_SECONDS;
}

/** The data of a run submitted at `now`: its parent job's, which the coordinator reads. */
function newRunData(
  loaded: LoadedPlan,
  runId: string,
  jobs: JobPayload[],
  now: Date,
  options: { deadlineSeconds?: number; jobsPerBatch?: number },
): RunJobData {
  const deadlineSeconds = options.deadlineSeconds ?? defaultDeadlineSeconds(jobs, loaded.plan.jobTimeoutSeconds);
  return {
    schema: RUN_JOB_SCHEMA,
    runId,
    plan: redactPlan(loaded.plan),
    submittedAt: now.toISOString(),
    deadline: new Date(now.getTime() + deadlineSeconds * 1000).toISOString(),
    jobs: runJobsOf(runId, jobs.map(jobRefOf)),
    jobsPerBatch: options.jobsPerBatch ?? jobsPerBatchFor(jobs),
  };
}

/** The run's jobs, once checkRunDataSize has passed them, before anything connects to Redis (the
 * instant it will be submitted at does not change the data's length): submitRun takes them. */
export function jobsThatFit(
  loaded: LoadedPlan,
  runId: string,
  options: { deadlineSeconds?: number; jobsPerBatch?: number } = {},
): JobPayload[] {
  const jobs = splitPlan(loaded, runId);
  checkRunDataSize(newRunData(loaded, runId, jobs, new Date(), options));
  return jobs;
}

/** Refuses, before anything is written, a run whose data (each region's jobs listed once) is longer
 * than the coordinator reads (JOB_LIMITS.runDataChars): it could never finish it. 220,000–330,000
 * jobs per region, as long as their names make each (100–150 characters). */
export function checkRunDataSize(data: RunJobData): void {
  const chars = JSON.stringify(data).length;
  if (chars <= JOB_LIMITS.runDataChars) return;
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  const perRegion = thousands(data.jobs.inEachRegion.length);
  // Too many jobs for one run, as the job limit's error is: a fired schedule is not tried again.
  throw new TooManyJobsError(
    `run ${data.runId}: ${perRegion} jobs in each region make a run's data of ${mib(chars)}, over the ${mib(JOB_LIMITS.runDataChars)} the coordinator reads; split the plan into runs of fewer targets or experiments`,
  );
}

export function jobRefOf(job: JobPayload): JobRef {
  const { jobId, region, target, probe, variant, shard } = job;
  return {
    jobId,
    region,
    target: target.name,
    probe,
    variant,
    ...(shard ? { shard: { partOf: shard.partOf, index: shard.index, count: shard.count } } : {}),
  };
}

/**
 * Each result is stored once: in the run's results hash, where the workers save them (a batch's
 * last one may ride on its completion into the parent's `processed` hash; worker/run-results.ts),
 * until the run is reported, then in the stored report. A batch is removed as it completes, and
 * the parent too. A batch that fails is kept as the process that fails it
 * decides (contracts/retention.ts), so these options say nothing about failures.
 */
const REMOVE_WHEN_DONE = { removeOnComplete: true } as const;

/** Batches added per Queue.addBulk (one pipeline): what the submitter holds in memory at a time. */
const BATCHES_PER_ADD = 200;
/** Calls sent before waiting for the first: Node builds the next while Redis runs the last. */
const ADDS_IN_FLIGHT = 4;

/** A region's jobs are cut into at least this many batches when it has that many jobs, so that its
 * workers share them and a run's last batch ends soon after the others: a run of up to 127 jobs
 * per region is one BullMQ job per probe job. */
const MIN_BATCHES_PER_REGION = 64;
/** A batch's data stays under this: a quarter of what a worker reads (JOB_LIMITS.jobDataChars). */
const BATCH_DATA_CHARS = JOB_LIMITS.jobDataChars / 4;

/**
 * Probe jobs per BullMQ job for a run: as many as JOB_LIMITS.jobsPerBatch, as few as 1, so that the
 * busiest region has MIN_BATCHES_PER_REGION batches and a batch's data stays under BATCH_DATA_CHARS.
 * A batch runs on one worker, one job after another; a batch taken again (its worker lost, say)
 * resumes after the jobs whose results it saved.
 */
export function jobsPerBatchFor(jobs: readonly JobPayload[]): number {
  const byCount = Math.min(
    JOB_LIMITS.jobsPerBatch,
    Math.floor(Math.max(...jobsPerRegion(jobs).values()) / MIN_BATCHES_PER_REGION),
  );
  if (byCount <= 1) return 1;
  let longest = 0;
  for (const job of jobs) longest = Math.max(longest, JSON.stringify(job).length);
  return Math.max(1, Math.min(byCount, Math.floor(BATCH_DATA_CHARS / longest)));
}

/** The parent of a run and its submission gate: adding it again (a retried submit) adds nothing. */
export function runParentOf(data: RunJobData): FlowJob {
  return {
    name: JOB_NAMES.run,
    queueName: RUNS_QUEUE,
    data,
    opts: { jobId: data.runId, ...REMOVE_WHEN_DONE },
    children: [
      {
        name: JOB_NAMES.submission,
        queueName: SUBMISSIONS_QUEUE,
        data: { runId: data.runId },
        opts: { jobId: data.runId },
      },
    ],
  };
}

/** What of a run its batches carry besides their jobs. */
type RunOfBatches = Pick<RunJobData, 'runId' | 'deadline' | 'jobsPerBatch'>;

/** A batch of a run's jobs as Queue.addBulk takes it: a child of the run's parent job, its id
 * fixed. With a key, its data is signed for the workers. */
export function batchJobOf(batch: BatchOf<JobPayload>, run: RunOfBatches, prefix: string, jobKey?: string) {
  const { runId, deadline } = run;
  const data: ProbeBatch = { schema: PROBE_BATCH_SCHEMA, runId, deadline, jobs: batch.jobs };
  return {
    name: JOB_NAMES.probe,
    data: signData(data, jobKey),
    opts: {
      jobId: batch.id,
      parent: { id: runId, queue: `${prefix}:${RUNS_QUEUE}` },
      attempts: JOB_ATTEMPTS,
      backoff: RETRY_BACKOFF,
      // A child that fails for good is recorded on the parent, which goes on without it.
      ignoreDependencyOnFailure: true,
      ...REMOVE_WHEN_DONE,
    },
  };
}

/** Rounds of adding what is missing and checking that it is there, before a submit gives up: a
 * failover in the middle of one costs a round or more. */
const SUBMIT_ROUNDS = 5;
/** Before the second round; doubled before each next (1 + 2 + 4 + 8 s): a failover's gap, for the
 * connections to find the new primary, covering a Cluster's default node timeout (15 s). */
const ROUND_PAUSE_MS = 1_000;
/** How long a submit waits for Redis's replicas to confirm its writes (WAIT), at most. */
const REPLICA_WAIT_MS = 5_000;

/** What completing a run did. */
export interface Completion {
  /** Batches this call added. */
  added: number;
  /** The run's batches. */
  batches: number;
  /** When Redis's replicas did not all confirm the writes in time: a failover now could lose them. */
  unconfirmed?: { acked: number; replicas: number; waitedMs: number };
}

/** A submit that could not get every batch of its run into Redis; the run id completes it later. */
export class SubmitIncompleteError extends Error {
  override name = 'SubmitIncompleteError';
}

/** Adds batches under the run's parent: a few Queue.addBulk calls in flight per region. */
async function addBatches(fleet: Fleet, run: RunOfBatches, batches: BatchOf<JobPayload>[]): Promise<void> {
  const byRegion = new Map<string, BatchOf<JobPayload>[]>();
  for (const batch of batches) {
    const regionBatches = byRegion.get(batch.region);
    if (regionBatches) regionBatches.push(batch);
    else byRegion.set(batch.region, [batch]);
  }
  const inFlight = new Set<Promise<unknown>>();
  try {
    for (const [region, regionBatches] of byRegion) {
      const queue = fleet.regionQueue(region);
      for (let start = 0; start < regionBatches.length; start += BATCHES_PER_ADD) {
        const adds = regionBatches
          .slice(start, start + BATCHES_PER_ADD)
          .map((batch) => batchJobOf(batch, run, fleet.prefix, fleet.jobKey));
        const adding = queue.addBulk(adds).finally(() => inFlight.delete(adding));
        inFlight.add(adding);
        if (inFlight.size >= ADDS_IN_FLIGHT) await Promise.race(inFlight);
      }
    }
    await Promise.all(inFlight);
  } catch (err) {
    await Promise.allSettled(inFlight);
    throw err;
  }
}

/**
 * Waits (WAIT) until Redis's replicas hold every write of the fleet's connection (its queues and
 * flows share it; a Cluster's: one per node, and WAIT asks each primary about the writes it
 * took), within REPLICA_WAIT_MS (less than a bounded command's timeout). Undefined when they all
 * did, or there are none; else how many did on the primary that confirmed least.
 */
async function confirmOnReplicas(fleet: Fleet): Promise<Completion['unconfirmed']> {
  const waitedMs = Math.round(Math.min(REPLICA_WAIT_MS, (fleet.redis.commandTimeoutMs ?? Infinity) * 0.8));
  const primaries = fleet.client instanceof Cluster ? fleet.client.nodes('master') : [fleet.client];
  let least: Completion['unconfirmed'];
  for (const primary of primaries) {
    const replicas = await connectedReplicas(primary);
    if (replicas === 0) continue;
    const acked = Number(await primary.wait(replicas, waitedMs));
    if (acked < replicas && (!least || acked / replicas < least.acked / least.replicas))
      least = { acked, replicas, waitedMs };
  }
  return least;
}

/**
 * Makes Redis hold the whole run: its parent (added again, gate and all, if a failover lost it),
 * each batch not pending and not done (a batch removed once complete is on the parent, and is not
 * added and run again), and no gate; then checks it is so, after Redis's replicas confirmed it, and
 * does another round if not (a failover meanwhile). Past the run's deadline no batch is added: the
 * run has stopped waiting for them. `beforeWrite` is called once, before the first write.
 * RedisFullError when Redis is full; SubmitIncompleteError when the rounds run out.
 */
export async function completeRun(
  fleet: Fleet,
  data: RunJobData,
  jobs: JobPayload[],
  beforeWrite: () => void = () => {},
): Promise<Completion> {
  const batches = new Map(batchesOf(jobs, data.jobsPerBatch).map((batch) => [batch.id, batch]));
  let added = 0;
  let unconfirmed: Completion['unconfirmed'];
  let lastProblem = 'the run is not whole in Redis after its writes';
  let writing = false;
  const write = () => {
    if (!writing) beforeWrite();
    writing = true;
  };
  for (let round = 0; round < SUBMIT_ROUNDS; round++) {
    try {
      let state = await readRunState(fleet, data);
      let wrote = false;
      if (!state.parent) {
        // Over meanwhile (its report stored, its parent gone): nothing to add.
        if (await fleet.store.getHead(data.runId)) return { added, batches: batches.size };
        write();
        await fleet.flows.add(runParentOf(data));
        wrote = true;
        state = await readRunState(fleet, data);
      }
      const missing = state.pastDeadline ? [] : state.missing.flatMap((batch) => batches.get(batch.id) ?? []);
      if (missing.length > 0) {
        write();
        await addBatches(fleet, data, missing);
        wrote = true;
        added += missing.length;
      }
      if (state.gated) {
        write();
        // Every batch is in (those added above were acknowledged first, and a replica receives
        // writes in order): without its gate, the parent goes on once they are done.
        await fleet.submissionsQueue().remove(data.runId);
        wrote = true;
      }
      if (!wrote) return { added, batches: batches.size };
      unconfirmed = await confirmOnReplicas(fleet);
      const after = await readRunState(fleet, data);
      if (after.parent && !after.gated && (after.pastDeadline || after.missing.length === 0))
        return { added, batches: batches.size, ...(unconfirmed ? { unconfirmed } : {}) };
      lastProblem = !after.parent
        ? 'its parent job is gone again'
        : `${after.missing.length} of ${batches.size} batches are missing${after.gated ? ' and its gate is back' : ''}`;
    } catch (err) {
      if (isRedisFull(err)) {
        const state = await readRunState(fleet, data).catch(() => undefined);
        throw await redisFullError(
          fleet.client,
          !state
            ? `run ${data.runId} is not fully submitted`
            : state.parent
              ? `run ${data.runId} is not fully submitted (${batches.size - state.missing.length} of ${batches.size} batches are in Redis)`
              : `run ${data.runId} is not submitted (nothing of it is in Redis)`,
        );
      }
      // A failover under way (a connection lost, a replica refusing writes): the next round finds
      // what the new primary holds. Anything else is not Redis's doing.
      if (redisErrorKind(err) === 'other') throw err;
      lastProblem = (err as Error).message;
    }
    if (round < SUBMIT_ROUNDS - 1) await sleep(ROUND_PAUSE_MS * 2 ** round);
  }
  throw new SubmitIncompleteError(
    `run ${data.runId} is not fully submitted after ${SUBMIT_ROUNDS} rounds (last: ${lastProblem})`,
  );
}

export interface SubmittedRun {
  runId: string;
  jobs: JobPayload[];
  /** The run as submitted (for a run that is over, as its report tells it). */
  data: RunJobData;
  /** True when this call created the run; false when a run with this id was there. */
  added: boolean;
  /** What this call added of the run's batches (all of them for a new run). */
  completion: Completion;
  /** The stored report, when a run with this id is over. */
  report?: RunReport;
}

/** A run id already taken by a run of another plan: submitting would show that run as this one's. */
export class RunIdTakenError extends BadInputError {
  override name = 'RunIdTakenError';
}

function refuseOtherPlan(runId: string, theirs: Plan, ours: Plan, since: string): void {
  const differences = planDifferences(theirs, ours);
  if (differences.length === 0) return;
  throw new RunIdTakenError(
    `run "${runId}" already exists (${since}) with another plan ("${theirs.name}"; differs in ${differences.join(', ')}): ` +
      'give another --run-id, or the same plan to see that run',
  );
}

/**
 * Submits the run, or completes the run already under this id (same plan only); returns once Redis
 * holds all of it (completeRun). `beforeWrite` is called once before the first write: a caller
 * names the run there, so that a submit cut off can be completed with its id.
 */
export async function submitRun(
  fleet: Fleet,
  loaded: LoadedPlan,
  runId: string,
  options: {
    deadlineSeconds?: number;
    now?: Date;
    /** @defaultValue jobsPerBatchFor(the run's jobs) */
    jobsPerBatch?: number;
    beforeWrite?: () => void;
    /** The run's jobs, made and checked already (jobsThatFit). @defaultValue splitPlan(loaded, runId), checked here */
    jobs?: JobPayload[];
  } = {},
): Promise<SubmittedRun> {
  const jobs = options.jobs ?? splitPlan(loaded, runId);
  const existing = await fleet.runs.getJob(runId);
  if (existing) {
    const data = runDataOf(existing);
    refuseOtherPlan(runId, data.plan, loaded.plan, `submitted ${data.submittedAt}`);
    // A submit cut off, or writes a failover lost: what is missing is added now.
    const completion = await completeRun(fleet, data, jobs, options.beforeWrite);
    return { runId, jobs, data, added: false, completion };
  }
  const report = await fleet.store.get(runId);
  if (report) {
    refuseOtherPlan(runId, report.plan, loaded.plan, `finished ${report.finishedAt}`);
    // A run that is over: its batches are done with.
    const data = {
      ...newRunData(loaded, runId, jobs, new Date(report.startedAt), { jobsPerBatch: 1 }),
      deadline: report.finishedAt,
    };
    return { runId, jobs, data, added: false, completion: { added: 0, batches: jobs.length }, report };
  }
  // Redis's clock, not this machine's: workers measure the deadline against the same one.
  const data = newRunData(loaded, runId, jobs, options.now ?? (await redisNow(fleet.client)), options);
  if (!options.jobs) checkRunDataSize(data);
  options.beforeWrite?.();
  try {
    await fleet.client.sadd(reportKeys.regions(fleet.prefix), ...loaded.plan.regions);
    // A Queue writes its settings (QUEUE_EVENTS_KEPT) to Redis as it opens; getVersion() waits for
    // that write, so the regions' queues have them before their jobs arrive.
    await Promise.all(loaded.plan.regions.map((region) => fleet.regionQueue(region).getVersion()));
  } catch (err) {
    if (isRedisFull(err))
      throw await redisFullError(fleet.client, `run ${runId} is not submitted (nothing of it is in Redis)`);
    throw err;
  }
  // The parent (with its gate) goes first, then the batches: completeRun adds what is missing.
  return { runId, jobs, data, added: true, completion: await completeRun(fleet, data, jobs) };
}
