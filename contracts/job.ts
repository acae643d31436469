// The job payload: what the coordinator puts on a region's queue and the worker checks
// again on receipt (Redis is a trust boundary), and what the embedded runner hands over.
import { z } from 'zod';
import { nameSchema } from './common.js';
import { JOB_LIMITS } from './limits.js';
import { credentialsTwiceProblem, httpUrlSchema, requestBodyProblem, runTargetSchema, targetSchema } from './plan.js';
import { PROBE_KINDS, PROBES, type ProbeKind, type ProbeParams, type ProbeVariant } from './probes/index.js';

export const JOB_SCHEMA = 'probefleet.job/v1';
export const PROBE_BATCH_SCHEMA = 'probefleet.probe-batch/v1';

/**
 * Why a worker fails a job for good before it can even read it: the code starts the job's
 * failedReason (`JOB_DATA_NOT_JSON: ...`), never retried. A job it can read but refuses says why
 * in words (an invalid payload, a bad signature).
 */
export const JOB_FAILURE_CODES = [
  /** The data is longer than JOB_LIMITS.jobDataChars: refused before it is parsed. */
  'JOB_DATA_TOO_LARGE',
  /** The data is not JSON (written to Redis by something other than probefleet). */
  'JOB_DATA_NOT_JSON',
] as const;
export type JobFailureCode = (typeof JOB_FAILURE_CODES)[number];

/** BullMQ custom ids may not contain ":" and may not be integers. */
export const jobIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,200}$/, 'may contain only A-Z, a-z, 0-9, ".", "_" and "-"')
  .refine((id) => !/^\d+$/.test(id), 'may not be an integer');

export const runIdSchema = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,119}$/, 'not a valid run id');

/** TLS settings as the worker needs them: the CA travels as PEM, not as a path. */
export const jobTlsSchema = z.strictObject({
  insecure: z.boolean(),
  caPem: z.string().optional(),
  servername: z.string().optional(),
  /** The client certificate as PEM, or a reference; the key and passphrase are references
   * (contracts/secrets.ts `wholeReference`), which the worker fills in (worker/secrets.ts). */
  cert: z.string().optional(),
  key: z.string().optional(),
  passphrase: z.string().optional(),
});
export type JobTls = z.infer<typeof jobTlsSchema>;

/** A plan's target as a job carries it: lab URLs resolved (coordinator/lab-targets.ts), the CA as PEM. */
export const jobTargetSchema = targetSchema
  .omit({ tls: true })
  // The body as text: a plan's body file is read when the plan is loaded.
  .extend({
    url: httpUrlSchema,
    tls: jobTlsSchema.optional(),
    body: z.string().optional(),
    // `both` made two targets, one per family, before the plan was split.
    ipFamily: z.union([z.literal(4), z.literal(6), z.literal('happy-eyeballs')]).optional(),
    dualStackOf: runTargetSchema.shape.dualStackOf,
  })
  .superRefine((target, ctx) => {
    const twice = credentialsTwiceProblem(target);
    if (twice) ctx.addIssue({ code: 'custom', path: ['url'], message: twice });
    const bodyProblem = requestBodyProblem(target);
    if (bodyProblem) ctx.addIssue({ code: 'custom', path: ['body'], message: bodyProblem });
  });
export type JobTarget = z.infer<typeof jobTargetSchema>;

/** Which shard a result is, of a job spread over several workers of its region (the load probe's
 * `workers`): the coordinator merges the shards' results into one, with `partOf` as its id. */
const shardFields = {
  /** The id of the job the shards together are: the merged result's. */
  partOf: jobIdSchema,
  index: z.int().min(0),
  count: z.int().min(2).max(JOB_LIMITS.shards),
};
const indexBelowCount: [(shard: { index: number; count: number }) => boolean, { message: string; path: string[] }] = [
  (shard) => shard.index < shard.count,
  { message: 'index must be below count', path: ['index'] },
];
export const shardRefSchema = z.strictObject(shardFields).refine(...indexBelowCount);
export type ShardRef = z.infer<typeof shardRefSchema>;

/** A shard as its job carries it: which one, and how long it waits for the others to be taken
 * (worker/shard-barrier.ts). */
export const jobShardSchema = z
  .strictObject({ ...shardFields, joinMs: z.int().min(1).max(600_000) })
  .refine(...indexBelowCount);
export type JobShard = z.infer<typeof jobShardSchema>;

function jobSchemaFor<K extends ProbeKind>(kind: K) {
  return z.strictObject({
    schema: z.literal(JOB_SCHEMA),
    jobId: jobIdSchema,
    runId: runIdSchema,
    plan: nameSchema,
    region: nameSchema,
    target: jobTargetSchema,
    probe: z.literal(kind),
    params: PROBES[kind].params,
    variant: PROBES[kind].variant,
    /** The job's time bound; the probe stops and reports what it has when it is reached. */
    timeLimitMs: z
      .int()
      .min(1)
      .max(JOB_LIMITS.durationSeconds * 1000),
    /** One of the workers a job is spread over: the params are its share (coordinator/split.ts). */
    shard: jobShardSchema.optional(),
  });
}

export const jobPayloadSchema = z.discriminatedUnion(
  'probe',
  PROBE_KINDS.map(jobSchemaFor) as [ReturnType<typeof jobSchemaFor>, ...ReturnType<typeof jobSchemaFor>[]],
  // zod cannot tie each member's `probe` literal to its own parameters through a generic map;
  // the hand-written type below does, and every member is built by the same function.
) as unknown as z.ZodType<JobPayload>;

interface JobBase {
  schema: typeof JOB_SCHEMA;
  jobId: string;
  runId: string;
  plan: string;
  region: string;
  target: JobTarget;
  timeLimitMs: number;
  shard?: JobShard;
}
export type JobOf<K extends ProbeKind> = JobBase & { probe: K; params: ProbeParams<K>; variant: ProbeVariant<K> };
export type JobPayload = { [K in ProbeKind]: JobOf<K> }[ProbeKind];

/**
 * What one BullMQ job in a region's queue carries: consecutive probe jobs of one run and region,
 * run one after another by one worker (coordinator/flow.ts says how many;
 * docs/decisions/011-batches-of-probe-jobs.md why). Each payload is checked as the worker reaches it (worker/execute-job.ts).
 */
export const probeBatchSchema = z.strictObject({
  schema: z.literal(PROBE_BATCH_SCHEMA),
  /** The run its jobs belong to: where their results are saved (contracts/queues.ts, reportKeys.results). */
  runId: runIdSchema,
  /** The run's deadline: past it, a worker starts none of the batch's jobs (the run has stopped
   * waiting for them, and reports them as not run). */
  deadline: z.iso.datetime(),
  jobs: z.array(z.unknown()).min(1).max(JOB_LIMITS.jobsPerBatch),
});
export interface ProbeBatch {
  schema: typeof PROBE_BATCH_SCHEMA;
  runId: string;
  deadline: string;
  jobs: JobPayload[];
}

/** A batch of a run's jobs as the run knows it: its BullMQ job id (its first job's) and its jobs. */
export interface BatchOf<T> {
  id: string;
  region: string;
  jobs: T[];
}

/**
 * A run's jobs cut into batches: consecutive jobs of one region, at most `jobsPerBatch` each, a
 * batch named by its first job's id (so a batch of one is named as its job). A shard is a batch of
 * its own, so that each is free for another worker: shards in one batch would wait on each other
 * behind one worker (worker/shard-barrier.ts). The submitter cuts
 * the jobs it adds and the finisher the run's job list (the same jobs in the same order) with the
 * same number, so both name the same batches.
 */
export function batchesOf<T extends { jobId: string; region: string; shard?: unknown }>(
  jobs: readonly T[],
  jobsPerBatch: number,
): BatchOf<T>[] {
  const batches: BatchOf<T>[] = [];
  let current: BatchOf<T> | undefined;
  for (const job of jobs) {
    if (
      !current ||
      current.region !== job.region ||
      current.jobs.length >= jobsPerBatch ||
      job.shard !== undefined ||
      current.jobs[0]?.shard !== undefined
    ) {
      current = { id: job.jobId, region: job.region, jobs: [] };
      batches.push(current);
    }
    current.jobs.push(job);
  }
  return batches;
}

/** How many of the jobs each region has, the regions in the order their first job comes. */
export function jobsPerRegion(jobs: readonly { region: string }[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const job of jobs) counts.set(job.region, (counts.get(job.region) ?? 0) + 1);
  return counts;
}
