// Turns a run's flow into its report: the results the workers saved for its jobs or returned with
// its children (batches of probe jobs, named as batchesOf names them), the batches that failed for
// good, and the jobs that had no result by the deadline (never taken, or taken by a worker that
// was lost). Whoever finishes a run (the coordinator processing the parent job, or
// the `run` command that submitted it) calls the same code, and the first stored report wins.
import type { Job } from 'bullmq';
import { JOB_STALLS_RETRIED, jobKey, parseJobKey, reportKeys } from '../contracts/queues.js';
import {
  probeResultSchema,
  type JobRef,
  type ProbeResult,
  type RunReport,
  type UnfinishedJob,
} from '../contracts/result.js';
import { expiredJobNoteSchema, runJobDataSchema, type ExpiredJobNote, type RunJobData } from '../contracts/run-job.js';
import { redisNow } from '../common/redis.js';
import { RedisFullError } from '../common/redis-errors.js';
import type { Fleet } from './fleet.js';
import { buildRunReport } from './run-report.js';
import { batchesById } from './run-state.js';

export class RunDataError extends Error {
  override name = 'RunDataError';
}

/** The run's report is built but Redis is too full to store it: the report is here, to be stored
 * again later (the coordinator) or shown anyway (the `run` command). */
export class ReportNotStoredError extends RedisFullError {
  override name = 'ReportNotStoredError';

  constructor(
    cause: RedisFullError,
    readonly report: RunReport,
  ) {
    super(cause.message);
  }
}

/** BullMQ's failedReason for a job whose worker was lost more than JOB_STALLS_RETRIED times
 * (moveStalledJobsToWait.lua); it has no code, so this is the one place that knows the text. */
const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

export function runDataOf(parent: Job): RunJobData {
  const parsed = runJobDataSchema.safeParse(parent.data);
  if (!parsed.success)
    throw new RunDataError(`run job ${parent.id} holds no valid run: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** Why a job of the run has no result, from what was known of it at the deadline. Every batch the
 * deadline took off has a note; a batch with none was not in Redis to take off. */
function notRunReason(ref: JobRef, note: ExpiredJobNote | undefined, deadline: string): string {
  const before = `before the run's deadline (${deadline})`;
  if (!note)
    return 'its batch was not in Redis: the write that added it was lost (a failover to a replica that had not received it, or a restart without persistence), or the submit that was to add it was cut off and not completed (probefleet run PLAN --run-id RUN completes it)';
  if (!note.takenAt) return `no worker of region "${ref.region}" took it ${before}`;
  const worker = note.takenBy ? `its worker (${note.takenBy})` : 'its worker';
  if (note.workersLost > 0) {
    const times = note.workersLost > 1 ? ` ${note.workersLost} times` : '';
    return `${worker} was lost while running it${times} (its lock expired: killed, hung or cut off from Redis), and no worker of region "${ref.region}" took it again ${before}`;
  }
  if (note.failedAttempts > 0)
    return `it failed ${note.failedAttempts} time(s) (last: ${note.lastError ?? 'no reason given'}) and was waiting to be retried at the run's deadline (${deadline})`;
  return `${worker} took it${note.takenAt ? ` at ${note.takenAt}` : ''} and it had not finished ${before}`;
}

/** Values of the run's results hash read per page (HSCAN): a big run's ~1.2 KB per job is never
 * held as text all at once beside its parsed results. */
const RESULTS_PER_READ = 1_000;

/** Each job's result, from the values the workers saved (worker/run-results.ts) and those a
 * batch returned (`{results: [...]}`), or why one cannot be read. */
async function resultsOf(fleet: Fleet, runId: string, returned: unknown[]): Promise<Map<string, ProbeResult | string>> {
  const resultById = new Map<string, ProbeResult | string>();
  const add = (value: unknown) => {
    const parsed = probeResultSchema.safeParse(value);
    const jobId = (value as { jobId?: unknown } | null)?.jobId;
    // A result that breaks the contract is as good as none: say so rather than drop it.
    if (parsed.success) resultById.set(parsed.data.jobId, parsed.data as ProbeResult);
    else if (typeof jobId === 'string')
      resultById.set(jobId, `the worker gave an invalid result: ${parsed.error.issues[0]?.message}`);
  };
  const key = reportKeys.results(fleet.prefix, runId);
  let cursor = '0';
  do {
    const [next, fieldsAndValues] = await fleet.client.hscan(key, cursor, 'COUNT', RESULTS_PER_READ);
    cursor = next;
    // HSCAN may return a field twice: the map keeps one result per job.
    for (let i = 1; i < fieldsAndValues.length; i += 2) {
      try {
        add(JSON.parse(fieldsAndValues[i]!));
      } catch {
        // not JSON: as if it was never saved
      }
    }
  } while (cursor !== '0');
  for (const value of returned) {
    const results = (value as { results?: unknown } | null)?.results;
    if (Array.isArray(results)) results.forEach(add);
  }
  return resultById;
}

/** Results and unfinished jobs of a run whose children are all done (or removed at the deadline). */
export async function collectRun(
  fleet: Fleet,
  parent: Job,
  data: RunJobData,
): Promise<{ results: ProbeResult[]; unfinishedJobs: UnfinishedJob[] }> {
  const [returned, failures, notes] = await Promise.all([
    parent.getChildrenValues(),
    parent.getIgnoredChildrenFailures(),
    fleet.client.hgetall(reportKeys.expiredJobs(fleet.prefix, data.runId)),
  ]);
  const resultById = await resultsOf(fleet, data.runId, Object.values(returned));
  const failureByBatch = new Map<string, string>();
  for (const [key, reason] of Object.entries(failures)) {
    const id = parseJobKey(fleet.prefix, key)?.jobId;
    if (id) failureByBatch.set(id, reason);
  }
  const noteOf = (id: string): ExpiredJobNote | undefined => {
    let parsed;
    try {
      parsed = expiredJobNoteSchema.safeParse(JSON.parse(notes[id] ?? 'null'));
    } catch {
      return undefined; // not JSON: no note, as if none was taken
    }
    return parsed.success ? parsed.data : undefined;
  };

  const results: ProbeResult[] = [];
  const unfinishedJobs: UnfinishedJob[] = [];
  for (const batch of batchesById(data).values()) {
    for (const ref of batch.jobs) {
      // A batch's failure is each of its jobs' without a result.
      const result = resultById.get(ref.jobId);
      const failure = failureByBatch.get(batch.id);
      if (result && typeof result !== 'string') results.push(result);
      else if (typeof result === 'string') unfinishedJobs.push({ ...ref, status: 'failed', reason: result });
      else if (failure === STALLED_TOO_OFTEN) {
        const workersLost = JOB_STALLS_RETRIED + 1;
        unfinishedJobs.push({
          ...ref,
          status: 'failed',
          reason: `its worker was lost while running it ${workersLost} times (its lock expired: killed, hung or cut off from Redis); not tried again`,
          workersLost,
        });
      } else if (failure !== undefined) unfinishedJobs.push({ ...ref, status: 'failed', reason: failure });
      else {
        const note = noteOf(ref.jobId);
        unfinishedJobs.push({
          ...ref,
          status: 'not-run',
          reason: notRunReason(ref, note, data.deadline),
          ...(note?.workersLost ? { workersLost: note.workersLost } : {}),
        });
      }
    }
  }
  return { results, unfinishedJobs };
}

/**
 * When a run finished, on Redis's clock (as its start, and its results' times, are): when its last
 * job finished, or its deadline if jobs were still waited for then; not when someone got to
 * building its report (a coordinator that was down, a `run` command that came back later).
 */
export function runFinishedAt(
  results: readonly ProbeResult[],
  unfinishedJobs: readonly UnfinishedJob[],
  deadline: string,
  now: Date,
): Date {
  let latest = Number.NEGATIVE_INFINITY;
  for (const result of results) latest = Math.max(latest, Date.parse(result.finishedAt));
  if (unfinishedJobs.some((job) => job.status === 'not-run')) latest = Math.max(latest, Date.parse(deadline));
  return Number.isFinite(latest) && latest < now.getTime() ? new Date(latest) : now;
}

/** Builds the run's report and stores it, unless it is stored already; returns the stored one.
 * ReportNotStoredError (with the report) when Redis is too full to store it. */
export async function finishRun(fleet: Fleet, parent: Job): Promise<{ report: RunReport; stored: boolean }> {
  const data = runDataOf(parent);
  const stored = await fleet.store.get(data.runId);
  if (stored) return { report: stored, stored: false };
  const { results, unfinishedJobs } = await collectRun(fleet, parent, data);
  const report = buildRunReport({
    runId: data.runId,
    mode: 'distributed',
    plan: data.plan,
    startedAt: new Date(data.submittedAt),
    finishedAt: runFinishedAt(results, unfinishedJobs, data.deadline, await redisNow(fleet.client)),
    results,
    unfinishedJobs,
  });
  return storeReport(fleet, report);
}

/** Stores a run's report unless one is stored (the first wins: that one is returned), then drops
 * what it was built from. ReportNotStoredError (with the report) when Redis is too full for it. */
export async function storeReport(fleet: Fleet, report: RunReport): Promise<{ report: RunReport; stored: boolean }> {
  const saved = await fleet.store.saveIfAbsent(report).catch((err: unknown) => {
    throw err instanceof RedisFullError ? new ReportNotStoredError(err, report) : err;
  });
  // The results and notes are in the report now (the first report stored wins, so they are done with).
  if (saved.stored)
    await fleet.client.del(
      reportKeys.results(fleet.prefix, report.runId),
      reportKeys.expiredJobs(fleet.prefix, report.runId),
    );
  return saved;
}

/** Keys of the run's children not done yet (the parent's pending dependencies, read in pages). */
async function pendingChildren(parent: Job): Promise<string[]> {
  const keys: string[] = [];
  let cursor = 0;
  do {
    const page = await parent.getDependencies({ unprocessed: { cursor, count: 500 } });
    keys.push(...(page.unprocessed ?? []));
    cursor = page.nextUnprocessedCursor ?? 0;
  } while (cursor !== 0);
  return keys;
}

/** What became of the pending children that no worker holds now: those the deadline removes (a
 * note with no `takenAt` for one never taken). By batch id. */
async function notesOn(fleet: Fleet, keys: string[]): Promise<Map<string, ExpiredJobNote>> {
  const read = fleet.client.pipeline();
  const children = keys.flatMap((key) => {
    const parsed = parseJobKey(fleet.prefix, key);
    if (!parsed) return [];
    read.hmget(key, 'processedOn', 'pb', 'stc', 'atm', 'failedReason');
    read.exists(`${key}:lock`);
    read.lpos(jobKey(fleet.prefix, parsed.queueName, 'active'), parsed.jobId);
    return [parsed.jobId];
  });
  const replies = (await read.exec()) ?? [];
  const notes = new Map<string, ExpiredJobNote>();
  children.forEach((jobId, i) => {
    const [fields, locked, activeAt] = replies.slice(3 * i, 3 * i + 3).map((reply) => reply?.[1]);
    const [processedOn, takenBy, stalls, failed, lastError] = (fields ?? []) as (string | null)[];
    if (locked === 1) return;
    if (!processedOn) {
      notes.set(jobId, { workersLost: 0, failedAttempts: 0 });
      return;
    }
    // In the active list without a lock: its worker is gone, and no stall check has put the job
    // back in the queue yet (none runs without a live worker of the region).
    const lostNow = activeAt !== null && activeAt !== undefined ? 1 : 0;
    notes.set(jobId, {
      ...(takenBy ? { takenBy } : {}),
      takenAt: new Date(Number(processedOn)).toISOString(),
      workersLost: Number(stalls ?? 0) + lostNow,
      failedAttempts: Number(failed ?? 0),
      ...(lastError ? { lastError } : {}),
    });
  });
  return notes;
}

/** Past its deadline, a run stops waiting: children no worker holds are removed from their
 * queues (and so from the parent's dependencies), after noting, for each of their jobs, what became
 * of those a worker had taken. Batches a worker is running still finish, each job within its own
 * time bound. Idempotent; returns how many jobs it removed. */
export async function expireRunIfDue(fleet: Fleet, parent: Job, data: RunJobData, now?: number): Promise<number> {
  // On Redis's clock, as the deadline was set: a coordinator whose clock is off expires on time.
  if ((now ?? (await redisNow(fleet.client)).getTime()) < Date.parse(data.deadline)) return 0;
  const pending = await pendingChildren(parent);
  if (pending.length === 0) return 0;
  const batches = batchesById(data);
  const jobsIn = (keys: string[]) =>
    keys.reduce((sum, key) => sum + (batches.get(parseJobKey(fleet.prefix, key)?.jobId ?? '')?.jobs.length ?? 0), 0);
  const notes = await notesOn(fleet, pending);
  if (notes.size > 0) {
    const key = reportKeys.expiredJobs(fleet.prefix, data.runId);
    const byJob = [...notes].flatMap(([batchId, note]) =>
      (batches.get(batchId)?.jobs ?? []).map((ref) => [ref.jobId, JSON.stringify(note)]),
    );
    await fleet.client
      .multi()
      .hset(key, Object.fromEntries(byJob))
      .expire(key, fleet.retention.jobs.maxAgeSeconds)
      .exec();
  }
  await parent.removeUnprocessedChildren();
  return jobsIn(pending) - jobsIn(await pendingChildren(parent));
}
