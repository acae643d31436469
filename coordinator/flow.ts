// A run as a BullMQ flow: one parent "run" job on the runs queue and one child per job of the
// plan, each in its region's queue. Ids are deterministic (coordinator/split.ts), so submitting
// the same run again adds nothing; submitting another plan under an existing run id is refused.
import type { FlowJob } from 'bullmq';
import { JOB_NAMES, regionQueueName, reportKeys, RUNS_QUEUE } from '../contracts/queues.js';
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

/** The flow of a run: adding it again (a retried submit) adds nothing, every id being fixed.
 * With a key, each job's data is signed for the workers. */
export function flowOf(data: RunJobData, jobs: JobPayload[], jobKey?: string): FlowJob {
  return {
    name: JOB_NAMES.run,
    queueName: RUNS_QUEUE,
    data,
    opts: { jobId: data.runId, ...REMOVE_WHEN_DONE },
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
        ...REMOVE_WHEN_DONE,
      },
    })),
  };
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
  await fleet.flows.add(flowOf(data, jobs, fleet.jobKey));
  return { runId, jobs, data, added: true };
}
