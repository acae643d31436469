// What distributed mode puts on the runs queue besides probe jobs: the data of a flow's parent
// "run" job, the data a job scheduler fires with, and the one-line summary of a stored run.
// The coordinator checks each of them again when it reads them back (Redis is a trust boundary).
import { z } from 'zod';
import { jobIdSchema, jobTlsSchema, runIdSchema } from './job.js';
import { JOB_LIMITS } from './limits.js';
import { distinct, nameSchema } from './common.js';
import { planAsRunSchema } from './plan.js';
import { type JobRef, jobRefSchema, RUN_SCHEMA } from './result.js';
import { scheduleSummarySchema } from './schedule-summary.js';

export const RUN_JOB_SCHEMA = 'probefleet.run-job/v2';
export const SCHEDULED_RUN_SCHEMA = 'probefleet.scheduled-run/v1';

const isoTime = z.iso.datetime();

/** A job as every region of the run has it: its reference less the region, its id `<run>.<region>.<idTail>`
 * (a shard's `partOf` is its job's idTail likewise). */
const jobInEachRegionSchema = jobRefSchema.omit({ jobId: true, region: true }).extend({ idTail: jobIdSchema });
type JobInEachRegion = z.infer<typeof jobInEachRegionSchema>;

/** A run's jobs: a plan makes the same jobs in each of its regions (coordinator/split.ts), so they are
 * listed once, not once per region (a reference per job would make a million-job run's data ~230 MB). */
const runJobsSchema = z.strictObject({
  /** In the order of their jobs. */
  regions: distinct(z.array(nameSchema).min(1), 'region'),
  inEachRegion: z.array(jobInEachRegionSchema).min(1),
});

/** Data of the parent "run" job of a flow. */
export const runJobDataSchema = z.strictObject({
  schema: z.literal(RUN_JOB_SCHEMA),
  runId: runIdSchema,
  /** The plan as run, header values redacted (the report shows it; the jobs carry the values). */
  plan: planAsRunSchema,
  submittedAt: isoTime,
  /** After this instant, jobs no worker has taken are reported as not run. */
  deadline: isoTime,
  /** Every probe job, so jobs that never ran can still be named in the report: runJobRefs lists them. */
  jobs: runJobsSchema,
  /** Probe jobs per BullMQ job: `batchesOf(jobs, jobsPerBatch)` are the parent's children. */
  jobsPerBatch: z.int().min(1).max(JOB_LIMITS.jobsPerBatch),
});
export type RunJobData = z.output<typeof runJobDataSchema>;

/** The run's jobs as its data lists them; Error when they are not the same in each region, which a
 * split plan's always are (a bug, not an input). */
export function runJobsOf(runId: string, refs: readonly JobRef[]): RunJobData['jobs'] {
  const regions: string[] = [];
  const inEachRegion: JobInEachRegion[] = [];
  let position = 0;
  for (const { jobId, region, shard, ...rest } of refs) {
    if (region !== regions.at(-1)) {
      if (regions.includes(region)) throw new Error(`run ${runId}: the jobs of region "${region}" are not together`);
      if (regions.length > 0 && position !== inEachRegion.length)
        throw new Error(`run ${runId}: region "${regions.at(-1)}" has ${position} jobs, not ${inEachRegion.length}`);
      regions.push(region);
      position = 0;
    }
    const prefix = `${runId}.${region}.`;
    if (!jobId.startsWith(prefix)) throw new Error(`run ${runId}: job ${jobId} is not named <run>.<region>.<job>`);
    const idTail = jobId.slice(prefix.length);
    if (shard && !shard.partOf.startsWith(prefix))
      throw new Error(`run ${runId}: shard ${jobId} is part of ${shard.partOf}, not of a job of its region`);
    // The tail names the target, the probe and a hash of parameters and variant (split.ts): equal
    // tails are equal jobs.
    if (regions.length === 1)
      inEachRegion.push({
        idTail,
        ...rest,
        ...(shard ? { shard: { ...shard, partOf: shard.partOf.slice(prefix.length) } } : {}),
      });
    else if (inEachRegion[position]?.idTail !== idTail)
      throw new Error(`run ${runId}: job ${jobId} is not the one at its place in region "${regions[0]}"`);
    position++;
  }
  if (regions.length > 1 && position !== inEachRegion.length)
    throw new Error(`run ${runId}: region "${regions.at(-1)}" has ${position} jobs, not ${inEachRegion.length}`);
  return { regions, inEachRegion };
}

/** Listed once per run's data: a wait and a finish ask for them many times. */
const refsOfJobs = new WeakMap<RunJobData['jobs'], JobRef[]>();

/** Every job of the run, region by region, in the order it was split (batchesOf cuts them the same). */
export function runJobRefs(data: Pick<RunJobData, 'runId' | 'jobs'>): JobRef[] {
  let refs = refsOfJobs.get(data.jobs);
  if (!refs) {
    refs = data.jobs.regions.flatMap((region) =>
      data.jobs.inEachRegion.map(({ idTail, shard, ...rest }) => {
        const prefix = `${data.runId}.${region}.`;
        return {
          jobId: prefix + idTail,
          region,
          ...rest,
          ...(shard ? { shard: { ...shard, partOf: prefix + shard.partOf } } : {}),
        };
      }),
    );
    refsOfJobs.set(data.jobs, refs);
  }
  return refs;
}

/** The run's jobs per region, the regions in the order their jobs come. */
export function jobsPerRegionOf(data: Pick<RunJobData, 'jobs'>): Map<string, number> {
  return new Map(data.jobs.regions.map((region) => [region, data.jobs.inEachRegion.length]));
}

/** Data a plan's job scheduler fires with: the whole plan, CA files read into PEM. */
export const scheduledRunDataSchema = z.strictObject({
  schema: z.literal(SCHEDULED_RUN_SCHEMA),
  plan: planAsRunSchema,
  /** Per target name, TLS settings as the jobs carry them. */
  tls: z.record(nameSchema, jobTlsSchema),
  /** Seconds from firing to the run's deadline; derived from the plan when absent. */
  deadlineSeconds: z.int().min(1).optional(),
  /** What `schedule list` shows; absent from schedules added before it was kept. */
  summary: scheduleSummarySchema.optional(),
  /** A plan with `targetFiles`: what reading them again at each firing needs (docs/plan.md, "Targets from files"). */
  targetFiles: z
    .strictObject({
      /** The plan's directory, absolute: the files' patterns are relative to it. */
      dir: z.string().min(1),
      /** Per targetFiles entry, its TLS settings as jobs carry them, or null. */
      tls: z.array(jobTlsSchema.nullable()),
      /** Where the lab was when the schedule was added (`--lab-at`), for lab URLs in the files. */
      lab: z
        .strictObject({ host: z.string().min(1), ports: z.record(z.string(), z.int().min(1).max(65_535)) })
        .optional(),
    })
    .optional(),
});
export type ScheduledRunData = z.output<typeof scheduledRunDataSchema>;

/** What became of a job a worker had taken, read just before the run's deadline took it off its
 * queue (contracts/queues.ts, reportKeys.expiredJobs): the report says why it has no result. */
export const expiredJobNoteSchema = z.strictObject({
  /** The BullMQ worker name of the last worker that took it (`<host>-<pid>`). */
  takenBy: z.string().max(200).optional(),
  takenAt: isoTime.optional(),
  /** Times a worker was lost while running it (killed or hung: its lock expired). */
  workersLost: z.int().nonnegative(),
  /** Attempts that ended in an error and were to be retried. */
  failedAttempts: z.int().nonnegative(),
  lastError: z.string().max(2000).optional(),
});
export type ExpiredJobNote = z.infer<typeof expiredJobNoteSchema>;

/** A stored run in one line, for `runs list`. */
export const runSummarySchema = z.strictObject({
  schema: z.literal(RUN_SCHEMA),
  runId: runIdSchema,
  plan: nameSchema,
  mode: z.enum(['embedded', 'distributed']),
  regions: z.array(nameSchema),
  startedAt: isoTime,
  finishedAt: isoTime,
  jobs: z.int().nonnegative(),
  /** Jobs whose probe measured everything it was asked to. */
  ok: z.int().nonnegative(),
  /** Jobs with a result whose probe reported an error (the target failed). */
  errors: z.int().nonnegative(),
  failed: z.int().nonnegative(),
  notRun: z.int().nonnegative(),
  findings: z.int().nonnegative(),
});
export type RunSummary = z.infer<typeof runSummarySchema>;
