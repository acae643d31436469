// A run in Redis: one parent "run" job on the runs queue whose children are the plan's jobs, each
// in its region's queue (BullMQ's parent/child dependencies: the parent is processed once every
// child is done). The parent goes in first with one child of its own, the run's submission gate,
// which holds it waiting; the jobs follow in batches (Queue.addBulk, a few batches in flight),
// and removing the gate lets the parent go once its jobs are done. One flow of 100,000 children
// is one transaction built whole in memory (1.65 GB, 6–7k jobs/s); batches keep memory bounded
// by a batch and let Node build one while Redis runs another (docs/architecture.md). Ids are
// deterministic (coordinator/split.ts), so submitting the same run again adds nothing, and a
// submit cut off halfway (its gate still there) is completed by the next; submitting another
// plan under an existing run id is refused.
import type { FlowJob } from 'bullmq';
import { JOB_NAMES, jobKey, regionQueueName, reportKeys, RUNS_QUEUE, SUBMISSIONS_QUEUE } from '../contracts/queues.js';
import type { JobPayload } from '../contracts/job.js';
import type { Plan } from '../contracts/plan.js';
import type { JobRef, RunReport } from '../contracts/result.js';
import { RUN_JOB_SCHEMA, type RunJobData } from '../contracts/run-job.js';
import { BadInputError } from '../common/bad-input.js';
import { signData } from '../common/job-signature.js';
import type { Fleet } from './fleet.js';
import type { LoadedPlan } from './loaded-plan.js';
import { runDataOf } from './run-finisher.js';
import { planDifferences, redactPlan } from './run-report.js';
import { splitPlan } from './split.js';

/** Transient failures (not a target's error, which is a result) are retried this often. */
const JOB_ATTEMPTS = 3;
const RETRY_BACKOFF = { type: 'exponential', delay: 2_000 } as const;

/** Slack on top of the jobs' own time bounds before a run stops waiting for its regions. */
const DEADLINE_SLACK_SECONDS = 60;

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
 * Each result is stored once: a probe job is removed as it completes, its return value living on
 * in the parent's `processed` hash, and the parent as it completes, its results living on in the
 * stored report. A job that fails is kept as the process that fails it decides
 * (contracts/retention.ts), so these options say nothing about failures.
 */
const REMOVE_WHEN_DONE = { removeOnComplete: true } as const;

/** A run's jobs are added this many per Queue.addBulk (one pipeline): a batch's jobs and
 * commands are what the submitter holds in memory at a time. */
const SUBMIT_BATCH_JOBS = 200;
/** Batches sent before waiting for the first: Node builds the next while Redis runs the last. */
const SUBMIT_BATCHES_IN_FLIGHT = 4;

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

/** One job of a run as Queue.addBulk takes it: a child of the run's parent job, its id fixed.
 * With a key, its data is signed for the workers. */
export function runJobOf(job: JobPayload, prefix: string, jobKey?: string) {
  return {
    name: JOB_NAMES.probe,
    data: signData(job, jobKey),
    opts: {
      jobId: job.jobId,
      parent: { id: job.runId, queue: `${prefix}:${RUNS_QUEUE}` },
      attempts: JOB_ATTEMPTS,
      backoff: RETRY_BACKOFF,
      // A child that fails for good is recorded on the parent, which goes on without it.
      ignoreDependencyOnFailure: true,
      ...REMOVE_WHEN_DONE,
    },
  };
}

/**
 * Adds a run's jobs under its parent, in batches per region queue, then removes the run's gate.
 * Jobs already done (their result on the parent) are left out: a job removed once complete
 * would otherwise be added, and run, again. Jobs still waiting are not added twice (fixed ids).
 */
export async function addRunJobs(fleet: Fleet, runId: string, jobs: JobPayload[]): Promise<void> {
  const parentKey = jobKey(fleet.prefix, RUNS_QUEUE, runId);
  const [processed, failed] = await Promise.all([
    fleet.client.hkeys(`${parentKey}:processed`),
    fleet.client.hkeys(`${parentKey}:failed`),
  ]);
  const done = new Set([...processed, ...failed]);
  const byRegion = new Map<string, JobPayload[]>();
  for (const job of jobs) {
    if (done.has(jobKey(fleet.prefix, regionQueueName(job.region), job.jobId))) continue;
    const regionJobs = byRegion.get(job.region);
    if (regionJobs) regionJobs.push(job);
    else byRegion.set(job.region, [job]);
  }
  const inFlight = new Set<Promise<unknown>>();
  try {
    for (const [region, regionJobs] of byRegion) {
      const queue = fleet.regionQueue(region);
      for (let start = 0; start < regionJobs.length; start += SUBMIT_BATCH_JOBS) {
        const batch = regionJobs
          .slice(start, start + SUBMIT_BATCH_JOBS)
          .map((job) => runJobOf(job, fleet.prefix, fleet.jobKey));
        const adding = queue.addBulk(batch).finally(() => inFlight.delete(adding));
        inFlight.add(adding);
        if (inFlight.size >= SUBMIT_BATCHES_IN_FLIGHT) await Promise.race(inFlight);
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
  options: { deadlineSeconds?: number; now?: Date } = {},
): Promise<SubmittedRun> {
  const jobs = splitPlan(loaded, runId);
  const existing = await fleet.runs.getJob(runId);
  if (existing) {
    const data = runDataOf(existing);
    refuseOtherPlan(runId, data.plan, loaded.plan, `submitted ${data.submittedAt}`);
    // Its gate still there: the submit that added it stopped before all jobs were in.
    if (await fleet.submissionsQueue().getJob(runId)) await addRunJobs(fleet, runId, jobs);
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
    };
    return { runId, jobs, data, added: false, report };
  }
  const now = options.now ?? new Date();
  const deadlineSeconds = options.deadlineSeconds ?? defaultDeadlineSeconds(jobs, loaded.plan.jobTimeoutSeconds);
  const data: RunJobData = {
    schema: RUN_JOB_SCHEMA,
    runId,
    plan: redactPlan(loaded.plan),
    submittedAt: now.toISOString(),
    deadline: new Date(now.getTime() + deadlineSeconds * 1000).toISOString(),
    jobs: jobs.map(jobRefOf),
  };
  await fleet.client.sadd(reportKeys.regions(fleet.prefix), ...loaded.plan.regions);
  // A Queue writes its settings (QUEUE_EVENTS_KEPT) to Redis as it opens; getVersion() waits for
  // that write, so the regions' queues have them before their jobs arrive.
  await Promise.all(loaded.plan.regions.map((region) => fleet.regionQueue(region).getVersion()));
  await fleet.flows.add(runParentOf(data));
  await addRunJobs(fleet, runId, jobs);
  return { runId, jobs, data, added: true };
}
