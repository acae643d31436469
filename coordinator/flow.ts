// A run in Redis: one parent "run" job on the runs queue whose children are the plan's jobs in
// batches, each batch one BullMQ job in its region's queue (BullMQ's parent/child dependencies: the
// parent is processed once every child is done). The parent goes in first with one child of its
// own, the run's submission gate, which holds it waiting; the batches follow (Queue.addBulk, a few
// calls in flight), and removing the gate lets the parent go once its jobs are done. One flow of
// 100,000 children is one transaction built whole in memory (1.65 GB, 6–7k jobs/s); a BullMQ job
// per probe job costs Redis one add script each (~17k jobs/s); batches of probe jobs cost it one
// per batch (docs/architecture.md). Ids are deterministic (coordinator/split.ts, batchesOf), so
// submitting the same run again adds nothing, and a submit cut off halfway (its gate still there)
// is completed by the next; submitting another plan under an existing run id is refused.
import type { FlowJob } from 'bullmq';
import { JOB_NAMES, jobKey, regionQueueName, reportKeys, RUNS_QUEUE, SUBMISSIONS_QUEUE } from '../contracts/queues.js';
import { batchesOf, PROBE_BATCH_SCHEMA, type BatchOf, type JobPayload, type ProbeBatch } from '../contracts/job.js';
import { JOB_LIMITS } from '../contracts/limits.js';
import type { Plan } from '../contracts/plan.js';
import type { JobRef, RunReport } from '../contracts/result.js';
import { RUN_JOB_SCHEMA, type RunJobData } from '../contracts/run-job.js';
import { BadInputError } from '../common/bad-input.js';
import { signData } from '../common/job-signature.js';
import { redisNow } from '../common/redis.js';
import type { Fleet } from './fleet.js';
import type { LoadedPlan } from './loaded-plan.js';
import { runDataOf } from './run-finisher.js';
import { planDifferences, redactPlan } from './run-report.js';
import { splitPlan } from './split.js';

/** Transient failures (not a target's error, which is a result) are retried this often. */
const JOB_ATTEMPTS = 3;
const RETRY_BACKOFF = { type: 'exponential', delay: 2_000 } as const;

/** Slack on top of the jobs' own time bounds before a run stops waiting for its regions. */
export const DEADLINE_SLACK_SECONDS = 60;

/** A region's worker (concurrency 1) runs its jobs one after another, each within the plan's
 * time bound: the run cannot need longer than the busiest region's jobs times that bound. */
export function defaultDeadlineSeconds(jobs: JobPayload[], jobTimeoutSeconds: number): number {
  const perRegion = new Map<string, number>();
  for (const job of jobs) perRegion.set(job.region, (perRegion.get(job.region) ?? 0) + 1);
  return Math.max(...perRegion.values()) * jobTimeoutSeconds + DEADLINE_SLACK_SECONDS;
}

export function jobRefOf(job: JobPayload): JobRef {
  return { jobId: job.jobId, region: job.region, target: job.target.name, probe: job.probe, variant: job.variant };
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
  const perRegion = new Map<string, number>();
  for (const job of jobs) perRegion.set(job.region, (perRegion.get(job.region) ?? 0) + 1);
  const byCount = Math.min(
    JOB_LIMITS.jobsPerBatch,
    Math.floor(Math.max(...perRegion.values()) / MIN_BATCHES_PER_REGION),
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

/**
 * Adds a run's jobs under its parent in batches of the run's `jobsPerBatch`, then removes the run's
 * gate. Batches already done (on the parent) are left out: a batch removed once complete would
 * otherwise be added, and run, again. Batches still waiting are not added twice (fixed ids).
 */
export async function addRunJobs(fleet: Fleet, run: RunOfBatches, jobs: JobPayload[]): Promise<void> {
  const { runId } = run;
  const parentKey = jobKey(fleet.prefix, RUNS_QUEUE, runId);
  const [processed, failed] = await Promise.all([
    fleet.client.hkeys(`${parentKey}:processed`),
    fleet.client.hkeys(`${parentKey}:failed`),
  ]);
  const done = new Set([...processed, ...failed]);
  const byRegion = new Map<string, BatchOf<JobPayload>[]>();
  for (const batch of batchesOf(jobs, run.jobsPerBatch)) {
    if (done.has(jobKey(fleet.prefix, regionQueueName(batch.region), batch.id))) continue;
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
    // The gate stays: the run waits for a submit that completes it (or for its deadline).
    await Promise.allSettled(inFlight);
    throw err;
  }
  // Every job is in: without its gate, the parent goes on once they are done (at once if they are).
  await fleet.submissionsQueue().remove(runId);
}

export interface SubmittedRun {
  runId: string;
  jobs: JobPayload[];
  /** The run as submitted (for a run that is over, as its report tells it). */
  data: RunJobData;
  /** False when a run with this id was already there (nothing was added). */
  added: boolean;
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

export async function submitRun(
  fleet: Fleet,
  loaded: LoadedPlan,
  runId: string,
  options: {
    deadlineSeconds?: number;
    now?: Date;
    /** @defaultValue jobsPerBatchFor(the run's jobs) */
    jobsPerBatch?: number;
  } = {},
): Promise<SubmittedRun> {
  const jobs = splitPlan(loaded, runId);
  const existing = await fleet.runs.getJob(runId);
  if (existing) {
    const data = runDataOf(existing);
    refuseOtherPlan(runId, data.plan, loaded.plan, `submitted ${data.submittedAt}`);
    // Its gate still there: the submit that added it stopped before all jobs were in.
    if (await fleet.submissionsQueue().getJob(runId)) await addRunJobs(fleet, data, jobs);
    return { runId, jobs, data, added: false };
  }
  const report = await fleet.store.get(runId);
  if (report) {
    refuseOtherPlan(runId, report.plan, loaded.plan, `finished ${report.finishedAt}`);
    const data: RunJobData = {
      schema: RUN_JOB_SCHEMA,
      runId,
      plan: report.plan,
      submittedAt: report.startedAt,
      deadline: report.finishedAt,
      jobs: [...report.results, ...report.unfinishedJobs].map((j) => ({
        jobId: j.jobId,
        region: j.region,
        target: j.target,
        probe: j.probe,
        variant: j.variant,
      })),
      jobsPerBatch: 1, // a run that is over: its batches are done with
    };
    return { runId, jobs, data, added: false, report };
  }
  // Redis's clock, not this machine's: workers measure the deadline against the same one.
  const now = options.now ?? (await redisNow(fleet.client));
  const deadlineSeconds = options.deadlineSeconds ?? defaultDeadlineSeconds(jobs, loaded.plan.jobTimeoutSeconds);
  const data: RunJobData = {
    schema: RUN_JOB_SCHEMA,
    runId,
    plan: redactPlan(loaded.plan),
    submittedAt: now.toISOString(),
    deadline: new Date(now.getTime() + deadlineSeconds * 1000).toISOString(),
    jobs: jobs.map(jobRefOf),
    jobsPerBatch: options.jobsPerBatch ?? jobsPerBatchFor(jobs),
  };
  await fleet.client.sadd(reportKeys.regions(fleet.prefix), ...loaded.plan.regions);
  // A Queue writes its settings (QUEUE_EVENTS_KEPT) to Redis as it opens; getVersion() waits for
  // that write, so the regions' queues have them before their jobs arrive.
  await Promise.all(loaded.plan.regions.map((region) => fleet.regionQueue(region).getVersion()));
  await fleet.flows.add(runParentOf(data));
  await addRunJobs(fleet, data, jobs);
  return { runId, jobs, data, added: true };
}
