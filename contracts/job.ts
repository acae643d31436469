// The job payload: what the coordinator puts on a region's queue and the worker checks
// again on receipt (Redis is a trust boundary), and what the embedded runner hands over.
import { z } from 'zod';
import { nameSchema } from './common.js';
import { JOB_LIMITS } from './limits.js';
import { credentialsTwiceProblem, httpUrlSchema, targetSchema } from './plan.js';
import { PROBE_KINDS, PROBES, type ProbeKind, type ProbeParams, type ProbeVariant } from './probes/index.js';

export const JOB_SCHEMA = 'probefleet.job/v1';

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
});
export type JobTls = z.infer<typeof jobTlsSchema>;

/** A plan's target as a job carries it: lab URLs resolved (coordinator/lab-targets.ts), the CA as PEM. */
export const jobTargetSchema = targetSchema
  .omit({ tls: true })
  .extend({ url: httpUrlSchema, tls: jobTlsSchema.optional() })
  .superRefine((target, ctx) => {
    const twice = credentialsTwiceProblem(target);
    if (twice) ctx.addIssue({ code: 'custom', path: ['url'], message: twice });
  });
export type JobTarget = z.infer<typeof jobTargetSchema>;

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
}
export type JobOf<K extends ProbeKind> = JobBase & { probe: K; params: ProbeParams<K>; variant: ProbeVariant<K> };
export type JobPayload = { [K in ProbeKind]: JobOf<K> }[ProbeKind];
