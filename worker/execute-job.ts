// Runs one job: the same code in the embedded runner and in a BullMQ worker. Validates the
// payload (Redis is a trust boundary), bounds it in time, and wraps the outcome in a result.
import { hostname } from 'node:os';
import type { z } from 'zod';
import type { ProbeError } from '../contracts/common.js';
import { jobPayloadSchema, type JobOf, type JobPayload } from '../contracts/job.js';
import { capsExceeded, type JobDemands } from '../contracts/limits.js';
import { PROBES, sendsToTarget, type ProbeKind } from '../contracts/probes/index.js';
import { probeResultSchema, RESULT_SCHEMA, type ProbeResult, type ResultOf } from '../contracts/result.js';
import { cpuWaitNs } from '../common/cpu-wait.js';
import { formatIssuePath } from '../common/issue-path.js';
import type { Logger } from '../common/log.js';
import { settledByBound } from '../common/settle.js';
import { AltSvcLog } from './http/alt-svc.js';
import { ProxyRefusedError, proxyOf } from './http/proxy.js';
import { PROBE_IMPLEMENTATIONS } from './probes/index.js';
import type { ProbeContext, ProbeOutcome } from './probes/probe.js';
import { SecretInvalidError, SecretNotSetError, withSecrets, type SecretFileDirs } from './secrets.js';
import { TargetAddresses } from './target-addresses.js';
import { EMBEDDED_POLICY_SETTINGS, TargetPolicy, TargetRefusedError } from './target-policy.js';

/** A payload that can never run: retrying it cannot help. */
export class InvalidJobError extends Error {
  override name = 'InvalidJobError';
}

export interface ExecuteOptions {
  /** The region this worker serves; a job for another region is refused. */
  region: string;
  log: Logger;
  /** Shutdown of the worker; the job's own time bound is added to it. */
  signal?: AbortSignal;
  /** Where probes may connect. @defaultValue the embedded run's: loopback allowed, private ranges refused */
  targetPolicy?: TargetPolicy;
  /** Run a `cold` client command the job names. @defaultValue false: a job from Redis never runs a command */
  allowClientCommands?: boolean;
  /** Where `${file:...}` secrets may be read. @defaultValue PROBEFLEET_SECRET_FILE_DIRS, or /run/secrets and /etc/probefleet */
  secretFileDirs?: SecretFileDirs;
}

const EMBEDDED_POLICY = new TargetPolicy(EMBEDDED_POLICY_SETTINGS);
/** Read once: every result names its worker's host. */
const HOST = hostname();

/** How long a probe may take to return what it has once its time bound (or the worker's
 * shutdown) stopped it: a probe stops at once, but a step of synchronous CPU work (brotli 11 on
 * 4 MiB in the level table) ends first. */
export const TIME_BOUND_GRACE_MS = 10_000;

export function parseJobPayload(payload: unknown): JobPayload {
  const parsed = jobPayloadSchema.safeParse(payload);
  if (!parsed.success) {
    throw new InvalidJobError(`invalid job payload: ${describeIssues(parsed.error)}`);
  }
  const job = parsed.data as JobPayload;
  // Each parameter is within its bounds; together they may still ask for more than a job may.
  const over = capsExceeded((PROBES[job.probe].demands as (params: JobPayload['params']) => JobDemands)(job.params));
  if (over.length > 0)
    throw new InvalidJobError(`invalid job payload: ${over.map((o) => `params.${o.param}: ${o.message}`).join('; ')}`);
  return job;
}

export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${formatIssuePath(issue.path)}: ${issue.message}`)
    .join('; ');
}

/** Checks the payload (InvalidJobError), then runs it as executeCheckedJob does. */
export async function executeJob(payload: unknown, options: ExecuteOptions): Promise<ProbeResult> {
  return executeCheckedJob(parseJobPayload(payload), options);
}

/** Runs a job that parseJobPayload has checked: refuses one for another region (InvalidJobError),
 * bounds it in time and wraps the outcome in a result. */
export async function executeCheckedJob(job: JobPayload, options: ExecuteOptions): Promise<ProbeResult> {
  if (job.region !== options.region) {
    throw new InvalidJobError(`job ${job.jobId} is for region "${job.region}", this worker serves "${options.region}"`);
  }
  const log = lazyJobLog(job, options.log);
  const bound = timeBound(job, options.signal);
  const startedAt = new Date().toISOString();
  const waitedBefore = cpuWaitNs();
  log.at('debug', { variant: job.variant }, 'probe starting');
  const ctx: ProbeContext = {
    signal: bound.signal,
    get log() {
      return log.get();
    },
    addresses: new TargetAddresses(options.targetPolicy ?? EMBEDDED_POLICY, job.target, bound.signal),
    allowClientCommands: options.allowClientCommands ?? false,
    altSvc: new AltSvcLog(),
  };
  let outcome: ProbeOutcome<ProbeKind>;
  try {
    outcome = await outcomeWithinBound(job, ctx, options.secretFileDirs, log);
  } finally {
    bound.release();
  }
  const waitedAfter = cpuWaitNs();
  const result = resultOf(job, options.region, startedAt, outcome, ctx.altSvc.values);
  const resolution = sendsToTarget(job.probe) ? ctx.addresses.resolution() : undefined;
  if (resolution) result.resolution = resolution;
  if (waitedBefore !== null && waitedAfter !== null)
    result.worker.cpuWaitMs = Math.max(0, waitedAfter - waitedBefore) / 1e6;
  return loggedResult(result, log);
}

/**
 * The job's logger, a pino child, made when something is logged: made for every job, its bindings
 * redacted, it would cost a measurable share of a one-request job's CPU, and most jobs log nothing
 * at a worker's level (bench/README.md, "Per job"). `at` makes it only when the level is enabled.
 */
function lazyJobLog(job: JobPayload, log: Logger) {
  let jobLog: Logger | undefined;
  const get = () => (jobLog ??= log.child({ jobId: job.jobId, probe: job.probe, target: job.target.name }));
  return {
    get,
    at(level: 'debug' | 'info', fields: object, message: string) {
      if (log.isLevelEnabled(level)) get()[level](fields, message);
    },
  };
}
type JobLog = ReturnType<typeof lazyJobLog>;

/** A signal aborted at the job's time bound or the worker's shutdown, whichever comes first;
 * `release` stops watching both once the probe is done. */
function timeBound(job: JobPayload, shutdown: AbortSignal | undefined) {
  // A timer of our own rather than AbortSignal.timeout, whose timer is unref'd: a probe waiting on
  // a promise nothing will settle would let the process end (exit 13) before its bound came.
  const bound = new AbortController();
  const timer = setTimeout(
    () => bound.abort(new DOMException(`the job's time bound (${job.timeLimitMs} ms) was reached`, 'TimeoutError')),
    job.timeLimitMs,
  );
  // The worker's shutdown stops the job as its bound does: a listener, not AbortSignal.any (a
  // signal of its own per job, a measurable share of a one-request job's CPU).
  const onShutdown = () => bound.abort(shutdown?.reason);
  if (shutdown?.aborted) onShutdown();
  else shutdown?.addEventListener('abort', onShutdown, { once: true });
  return {
    signal: bound.signal,
    release() {
      clearTimeout(timer);
      shutdown?.removeEventListener('abort', onShutdown);
    },
  };
}

/** The probe's outcome, or the target policy's or a secret's refusal, by the job's time bound. */
function outcomeWithinBound(
  job: JobPayload,
  ctx: ProbeContext,
  secretFileDirs: SecretFileDirs | undefined,
  log: JobLog,
): Promise<ProbeOutcome<ProbeKind>> {
  // A probe that ignores its bound cannot hold a worker (or an embedded run) past it: the
  // abandoned work goes on in the background, and a probe that needs this is a bug.
  return settledByBound(
    (async () =>
      (await refusedTarget(job, ctx.addresses)) ??
      (await withSecretsIn(job, secretFileDirs, (ready) => runProbe(ready, ctx))))(),
    ctx.signal,
    TIME_BOUND_GRACE_MS,
    () => {
      log.get().error({ graceMs: TIME_BOUND_GRACE_MS }, 'probe still running after its time bound: abandoned');
      return notRun({
        code: 'DEADLINE_EXCEEDED',
        message: `the probe did not stop within ${TIME_BOUND_GRACE_MS} ms of its time bound (${job.timeLimitMs} ms): its partial results are lost`,
      });
    },
  );
}

/** The result as the schema takes it (checkedResult), logged as the job finished. */
function loggedResult(result: ProbeResult, log: JobLog): ProbeResult {
  const checked = checkedResult(result);
  if (checked !== result) log.get().error({ error: checked.error }, 'probe result refused by the result schema');
  // Every job at debug (`--log-level debug`), as blackbox_exporter logs its probes; one that
  // failed at info. A line per job would cost ~10% of a worker's CPU at 1,000 one-request jobs/s,
  // and the jobs are counted in the metrics and listed in the report anyway.
  log.at(
    checked.ok ? 'debug' : 'info',
    { ok: checked.ok, error: checked.error?.code, requests: checked.summary.requests },
    'probe finished',
  );
  return checked;
}

function resultOf(
  job: JobPayload,
  region: string,
  startedAt: string,
  outcome: ProbeOutcome<ProbeKind>,
  altSvc: string[],
): ProbeResult {
  return {
    schema: RESULT_SCHEMA,
    jobId: job.jobId,
    runId: job.runId,
    region: job.region,
    target: job.target.name,
    ...(job.target.labels ? { labels: job.target.labels } : {}),
    ...(job.shard ? { shard: { partOf: job.shard.partOf, index: job.shard.index, count: job.shard.count } } : {}),
    probe: job.probe,
    variant: job.variant,
    ok: outcome.error === null,
    error: outcome.error,
    startedAt,
    finishedAt: new Date().toISOString(),
    worker: { host: HOST, pid: process.pid, region },
    summary: outcome.summary,
    details: outcome.details,
    findings: outcome.findings,
    altSvc,
  } as ResultOf<ProbeKind> as ProbeResult;
}

/** The result of a job that could not run or whose run left nothing to report, measured by this process. */
export function failedResult(job: JobPayload, region: string, startedAt: Date, error: ProbeError): ProbeResult {
  return resultOf(job, region, startedAt.toISOString(), notRun(error), []);
}

/**
 * The result as the schema takes it, checked where it is made: a value no reader could take
 * back (a non-finite number from a server's header, a date that is no date) would otherwise be
 * stored and make the whole run unreadable. A result the schema refuses keeps its place and
 * timing, loses its details, and says which field was refused.
 */
function checkedResult(result: ProbeResult): ProbeResult {
  const parsed = probeResultSchema.safeParse(result);
  if (parsed.success) return result;
  const { summary, details, findings, error } = notRun({
    code: 'INTERNAL_ERROR',
    message: `probe ${result.probe} made a result the result schema refuses (${describeIssues(parsed.error)}); its measurements are dropped`,
  });
  return { ...result, ok: false, summary, details, findings, error, altSvc: [] } as ResultOf<ProbeKind> as ProbeResult;
}

async function runProbe<K extends ProbeKind>(
  job: JobOf<K>,
  ctx: ProbeContext,
): Promise<ProbeOutcome<K> | ProbeOutcome<ProbeKind>> {
  const probe = PROBE_IMPLEMENTATIONS[job.probe];
  try {
    return await probe(job, ctx);
  } catch (err) {
    // A throw from a probe is a bug, not a target failure: report it, keep the worker up.
    ctx.log.error({ err }, 'probe failed unexpectedly');
    return notRun({ code: 'INTERNAL_ERROR', message: `probe ${job.probe} failed: ${(err as Error).message}` });
  }
}

/**
 * A target the policy refuses is one result with the reason, whatever the probe that sends to it:
 * the probe does not start. Checked here: an IP address, and a name with a warm cache (its lookup
 * before the measurement). A name looked up cold is checked where each connection looks it up,
 * on the address that lookup gave; a failed lookup is left to the probe, which reports it its own way.
 */
async function refusedTarget(
  job: JobPayload,
  addresses: TargetAddresses,
): Promise<ProbeOutcome<ProbeKind> | undefined> {
  // A probe that sends elsewhere (dns: to its resolvers) checks those addresses itself.
  if (!sendsToTarget(job.probe)) return undefined;
  try {
    await addresses.warmUp();
    return undefined;
  } catch (err) {
    return err instanceof TargetRefusedError
      ? notRun({ code: 'TARGET_REFUSED_BY_POLICY', message: err.message })
      : undefined;
  }
}

/** Runs the job with its references filled in from this worker's environment; a missing variable,
 * or a value that cannot be sent, is a result saying which, and the probe does not start. */
async function withSecretsIn(
  job: JobPayload,
  fileDirs: SecretFileDirs | undefined,
  run: (job: JobPayload) => Promise<ProbeOutcome<ProbeKind>>,
): Promise<ProbeOutcome<ProbeKind>> {
  let target;
  try {
    target = withSecrets(job.target, process.env, fileDirs);
    // A proxy (the target's, or the environment's) that cannot be used is the job's result.
    proxyOf(target);
  } catch (err) {
    if (err instanceof SecretNotSetError || err instanceof SecretInvalidError || err instanceof ProxyRefusedError)
      return notRun({ code: err.code, message: err.message });
    throw err;
  }
  return run({ ...job, target } as JobPayload);
}

function notRun(error: ProbeError): ProbeOutcome<ProbeKind> {
  return {
    summary: { requests: 0, errors: 0, connectionsOpened: 0, durationMs: 0, phases: {} },
    details: null,
    findings: [],
    error,
  };
}
