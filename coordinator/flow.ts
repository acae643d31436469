// A run as a BullMQ flow: one parent "run" job on the runs queue and one child per job of the
// plan, each in its region's queue. Ids are deterministic (coordinator/split.ts), so submitting
// the same run again adds nothing.
import type { FlowJob } from 'bullmq';
import { JOB_NAMES, regionQueueName, reportKeys, RUNS_QUEUE } from '../contracts/queues.js';
import type { JobPayload } from '../contracts/job.js';
import type { JobRef } from '../contracts/result.js';
import { RUN_JOB_SCHEMA, runJobDataSchema, type RunJobData } from '../contracts/run-job.js';
import { signData } from '../common/job-signature.js';
import type { Fleet } from './fleet.js';
import type { LoadedPlan } from './plan-loader.js';
import { redactPlan } from './run-report.js';
import { splitPlan } from './split.js';

/** Finished jobs are removed from Redis after this long (their results live on in the report). */
export const JOB_RETENTION_SECONDS = 7 * 86_400;

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

const RETENTION = { removeOnComplete: { age: JOB_RETENTION_SECONDS }, removeOnFail: { age: JOB_RETENTION_SECONDS } };

/** The flow of a run: adding it again (a retried submit) adds nothing, every id being fixed.
 * With a key, each job's data is signed for the workers. */
export function flowOf(data: RunJobData, jobs: JobPayload[], jobKey?: string): FlowJob {
  return {
    name: JOB_NAMES.run,
    queueName: RUNS_QUEUE,
    data,
    opts: { jobId: data.runId, ...RETENTION },
    children: jobs.map((job) => ({
      name: JOB_NAMES.probe,
      queueName: regionQueueName(job.region),
      data: signData(job, jobKey),
      opts: {
        jobId: job.jobId,
        attempts: JOB_ATTEMPTS,
        backoff: RETRY_BACKOFF,
        // A child that fails for good is recorded on the parent, which goes on without it.
        ignoreDependencyOnFailure: true,
        ...RETENTION,
      },
    })),
  };
}

export interface SubmittedRun {
  runId: string;
  jobs: JobPayload[];
  data: RunJobData;
  /** False when a run with this id was already there (nothing was added). */
  added: boolean;
}

export async function submitRun(
  fleet: Fleet,
  loaded: LoadedPlan,
  runId: string,
  options: { deadlineSeconds?: number; now?: Date } = {},
): Promise<SubmittedRun> {
  const existing = await fleet.runs.getJob(runId);
  if (existing) {
    return { runId, jobs: splitPlan(loaded, runId), data: runJobDataSchema.parse(existing.data), added: false };
  }
  const jobs = splitPlan(loaded, runId);
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
  await fleet.flows.add(flowOf(data, jobs, fleet.jobKey));
  return { runId, jobs, data, added: true };
}
