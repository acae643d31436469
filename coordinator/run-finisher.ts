// Turns a run's flow into its report: the results the workers saved for its jobs or returned with
// its children (batches of probe jobs, named as batchesOf names them), the batches that failed for
// good, and the jobs that had no result by the deadline (never taken, or taken by a worker that
// was lost). Whoever finishes a run (the coordinator processing the parent job, or
// the `run` command that submitted it) calls the same code, one at a time (a lease in Redis), and
// the first stored report wins.
// A run is read, analysed and stored a target at a time (buildRunInParts), so finishing a run of
// 100,000 jobs holds one target's results, not the run's.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from 'bullmq';
import { JOB_STALLS_RETRIED, jobKey, parseJobKey, reportKeys } from '../contracts/queues.js';
import {
  probeResultSchema,
  reportOf,
  type JobRef,
  type ProbeResult,
  type RunReport,
  type RunReportHead,
  type UnfinishedJob,
} from '../contracts/result.js';
import { expiredJobNoteSchema, runJobDataSchema, type ExpiredJobNote, type RunJobData } from '../contracts/run-job.js';
import { redisNow } from '../common/redis.js';
import { RedisFullError } from '../common/redis-errors.js';
import type { Fleet } from './fleet.js';
import type { FinishingLease } from './report-store.js';
import { analysisGroups } from './analysis.js';
import { RunReportBuilder } from './run-report.js';
import { batchesById } from './run-state.js';

export class RunDataError extends Error {
  override name = 'RunDataError';
}

/** Redis is too full to store the run's report: finishing again once it has room stores it (the
 * coordinator), or the report is built in memory and shown anyway (the `run` command). */
export class ReportNotStoredError extends RedisFullError {
  override name = 'ReportNotStoredError';

  constructor(
    cause: RedisFullError,
    readonly runId: string,
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

/** Results read from the run's results hash per HMGET: a group's thousands of jobs in a few reads. */
const RESULTS_PER_READ = 1_000;

/** A result as the finisher reads it: valid, or why it cannot be used. */
type ReadResult = ProbeResult | string;

/** A saved or returned result, or why it breaks the contract (as good as none: said, not dropped). */
function readResult(value: unknown): { jobId: string; result: ReadResult } | undefined {
  const parsed = probeResultSchema.safeParse(value);
  if (parsed.success) return { jobId: parsed.data.jobId, result: parsed.data as ProbeResult };
  const jobId = (value as { jobId?: unknown } | null)?.jobId;
  return typeof jobId === 'string'
    ? { jobId, result: `the worker gave an invalid result: ${parsed.error.issues[0]?.message}` }
    : undefined;
}

/** The results a batch returned (`{results: [...]}`) rather than saved: at most its last job's. */
function returnedResults(returned: unknown[]): Map<string, ReadResult> {
  const byId = new Map<string, ReadResult>();
  for (const value of returned) {
    const results = (value as { results?: unknown } | null)?.results;
    if (!Array.isArray(results)) continue;
    for (const item of results) {
      const read = readResult(item);
      if (read) byId.set(read.jobId, read.result);
    }
  }
  return byId;
}

/** The results the workers saved (worker/run-results.ts) for these jobs, read in pages. */
async function savedResults(fleet: Fleet, runId: string, jobIds: string[]): Promise<Map<string, ReadResult>> {
  const byId = new Map<string, ReadResult>();
  const key = reportKeys.results(fleet.prefix, runId);
  for (let i = 0; i < jobIds.length; i += RESULTS_PER_READ) {
    const values = await fleet.client.hmget(key, ...jobIds.slice(i, i + RESULTS_PER_READ));
    for (const text of values) {
      if (text === null) continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        continue; // not JSON: as if it was never saved
      }
      const read = readResult(value);
      if (read) byId.set(read.jobId, read.result);
    }
  }
  return byId;
}

/** The run's jobs, each with its batch, by analysis group (analysisGroupOf), in the batches' order. */
function jobsByGroup(data: RunJobData): { ref: JobRef; batchId: string }[][] {
  const jobs = [...batchesById(data).values()].flatMap((batch) =>
    batch.jobs.map((ref) => ({ ref, batchId: batch.id })),
  );
  return analysisGroups(jobs, ({ ref }) => ref.target);
}

/**
 * Builds the report of a run whose children are all done (or removed at the deadline), a group
 * of jobs at a time: each group's results are read, analysed and handed to `sink` (the stored
 * report's pages), then let go. Returns the head; the process holds one target's results at most.
 */
export async function buildRunInParts(
  fleet: Fleet,
  parent: Job,
  data: RunJobData,
  sink: (results: ProbeResult[]) => Promise<void>,
): Promise<RunReportHead> {
  const [returned, failures, notes] = await Promise.all([
    parent.getChildrenValues(),
    parent.getIgnoredChildrenFailures(),
    fleet.client.hgetall(reportKeys.expiredJobs(fleet.prefix, data.runId)),
  ]);
  const returnedById = returnedResults(Object.values(returned));
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

  const builder = new RunReportBuilder({
    runId: data.runId,
    mode: 'distributed',
    plan: data.plan,
    startedAt: new Date(data.submittedAt),
  });
  const unfinishedJobs: UnfinishedJob[] = [];
  let lastResultAt = Number.NEGATIVE_INFINITY;
  for (const jobs of jobsByGroup(data)) {
    const saved = await savedResults(
      fleet,
      data.runId,
      jobs.map(({ ref }) => ref.jobId),
    );
    const results: ProbeResult[] = [];
    for (const { ref, batchId } of jobs) {
      // A returned result is the batch's last word on its job; a batch's failure is each of its jobs' without a result.
      const result = returnedById.get(ref.jobId) ?? saved.get(ref.jobId);
      const failure = failureByBatch.get(batchId);
      if (result && typeof result !== 'string') {
        results.push(result);
        lastResultAt = Math.max(lastResultAt, Date.parse(result.finishedAt));
      } else if (typeof result === 'string') unfinishedJobs.push({ ...ref, status: 'failed', reason: result });
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
    await sink(builder.add(results));
  }
  const finishedAt = runFinishedAt(lastResultAt, unfinishedJobs, data.deadline, await redisNow(fleet.client));
  return builder.head(finishedAt, unfinishedJobs);
}

/**
 * When a run finished, on Redis's clock (as its start, and its results' times, are): when its last
 * job finished (`lastResultAt`, ms; -Infinity for none), or its deadline if jobs were still waited
 * for then; not when someone got to building its report (a coordinator that was down, a `run`
 * command that came back later).
 */
export function runFinishedAt(
  lastResultAt: number,
  unfinishedJobs: readonly UnfinishedJob[],
  deadline: string,
  now: Date,
): Date {
  let latest = lastResultAt;
  if (unfinishedJobs.some((job) => job.status === 'not-run')) latest = Math.max(latest, Date.parse(deadline));
  return Number.isFinite(latest) && latest < now.getTime() ? new Date(latest) : now;
}

/** How long a finisher holds a run without renewing it; it renews every third of that. */
export const FINISHING_LEASE_MS = 30_000;

/** This finisher's lease ran out while it built (a stall) and another took it: that one finishes. */
class FinishingLeaseLostError extends Error {}

/** Builds the run's report and stores it in parts, unless one is stored already; returns the
 * stored head. One finisher at a time: another process finishing the same run is waited for (its
 * report, or its lease running out). ReportNotStoredError when Redis is too full to store it
 * (what was written of it is dropped; the results it is built from stay until a report is stored). */
export async function finishRun(
  fleet: Fleet,
  parent: Job,
  options: { leaseMs?: number; pollMs?: number } = {},
): Promise<{ head: RunReportHead; stored: boolean }> {
  const { leaseMs = FINISHING_LEASE_MS, pollMs = 250 } = options;
  const data = runDataOf(parent);
  for (;;) {
    let lease: FinishingLease | undefined;
    try {
      lease = await fleet.store.takeFinishing(data.runId, leaseMs);
    } catch (err) {
      throw err instanceof RedisFullError ? new ReportNotStoredError(err, data.runId) : err;
    }
    if (!lease) {
      // Another finisher is at it: its report, or its lease running out, ends the wait.
      const existing = await fleet.store.getHead(data.runId);
      if (existing) return { head: existing, ...(await droppingInputs(fleet, data, false)) };
      await sleep(pollMs);
      continue;
    }
    try {
      const finished = await finishHolding(fleet, parent, data, lease, leaseMs);
      if (finished) return { head: finished.head, ...(await droppingInputs(fleet, data, finished.stored)) };
    } finally {
      await lease.release().catch(() => {});
    }
  }
}

/** The results and notes are in the stored report once there is one (the first stored wins). */
async function droppingInputs(fleet: Fleet, data: RunJobData, stored: boolean): Promise<{ stored: boolean }> {
  await fleet.client.del(
    reportKeys.results(fleet.prefix, data.runId),
    reportKeys.expiredJobs(fleet.prefix, data.runId),
  );
  return { stored };
}

/** finishRun's work while it holds the lease; undefined when the lease was lost on the way. */
async function finishHolding(
  fleet: Fleet,
  parent: Job,
  data: RunJobData,
  lease: FinishingLease,
  leaseMs: number,
): Promise<{ head: RunReportHead; stored: boolean } | undefined> {
  // Looked for again now that the lease is held: its last holder may have stored the report just before.
  const existing = await fleet.store.getHead(data.runId);
  if (existing) return { head: existing, stored: false };
  let lost = false;
  // Renewed on a timer, not per target: one target of many jobs, or a busy machine, outlasts a renewal.
  const renewing = setInterval(() => {
    lease.renew().then(
      (held) => {
        lost ||= !held;
      },
      () => {}, // Redis away for a moment: the next renewal tries again
    );
  }, leaseMs / 3);
  const draft = fleet.store.draft(data.runId);
  try {
    const head = await buildRunInParts(fleet, parent, data, async (results) => {
      if (lost) throw new FinishingLeaseLostError();
      await draft.add(results);
    });
    if (lost) throw new FinishingLeaseLostError();
    const { stored } = await fleet.store.saveIfAbsent(head, draft);
    const first = stored ? head : await fleet.store.getHead(data.runId);
    return { head: first ?? head, stored };
  } catch (err) {
    await draft.discard().catch(() => {});
    if (err instanceof FinishingLeaseLostError) return undefined;
    throw err instanceof RedisFullError ? new ReportNotStoredError(err, data.runId) : err;
  } finally {
    clearInterval(renewing);
  }
}

/** The report of a finished run built in this process without storing it, when Redis is too full
 * to store it: shown anyway. Holds every result. */
export async function buildRunInMemory(fleet: Fleet, parent: Job): Promise<RunReport> {
  const results: ProbeResult[] = [];
  const head = await buildRunInParts(fleet, parent, runDataOf(parent), async (group) => {
    results.push(...group);
  });
  return reportOf(head, results);
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
