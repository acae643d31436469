// Where a region worker keeps its probe results: the run's results hash (reportKeys.results), job
// id → result JSON, which the finisher reads when it builds the report. A batch's results are
// saved as its jobs finish (at most every RESULTS_SAVED_EVERY_MS, and as the batch completes, fails
// or is handed back), so a batch taken again (its worker lost, a retry, a hand-back) resumes after
// its last saved job instead of measuring everything again.
//
// A batch's last result, when it is the only one not saved yet, rides on the batch's completion
// instead (its return value, which BullMQ keeps on the run's parent job): a batch of one job, as a
// small run has, then costs no Redis round trip more than BullMQ's own. Waiting for a save cost a
// one-request job ~200 µs of worker CPU in the end-to-end benchmark (an event-loop turn more per
// job on two busy vCPUs). More results are saved first, because BullMQ also copies return values
// into each queue's event stream, which keeps 100–200 events whatever its maxLen says: a batch's
// results there would be a second copy of thousands of results per region in Redis; one per event
// is what a batch of one job puts there.
//
// Every write is fenced by the batch's lock: it is made only while the lock in Redis is still the
// token this worker took the batch with. A worker cut off from Redis whose writes arrive once it is
// back (queued by its connection meanwhile) cannot overwrite the results of the worker that took
// the batch over, nor re-create a run's results after its report was stored.
import { performance } from 'node:perf_hooks';
import type { RedisClient } from 'bullmq';
import { reportKeys } from '../contracts/queues.js';
import { probeResultSchema, type ProbeResult } from '../contracts/result.js';
import { redisClockAheadMs } from '../common/redis.js';
import { LeaseLostError } from './fleet-worker.js';

/** A batch's finished jobs are saved at most this often (and always at its end): a worker lost
 * mid-batch costs about this much measuring, plus the job it was running. */
export const RESULTS_SAVED_EVERY_MS = 1_000;

/** A batch as this worker holds it: its BullMQ job's key and the token of its lock. */
export interface HeldBatch {
  jobKey: string;
  token: string;
}

/** The key beside a batch's BullMQ job that names the probe job its worker is running. */
export const runningKey = (batchJobKey: string) => `${batchJobKey}:probefleet-running`;

/** Redis's clock is read again once this old: the offset from this machine's monotonic clock
 * drifts by parts per million, and a round trip per batch is a round trip per job in small runs. */
const CLOCK_READ_EVERY_MS = 60_000;

/** Scripts on the worker's connection (BullMQ's client type has no TIME, and fenced writes need one). */
const SCRIPTS = {
  redisTime: { numberOfKeys: 0, lua: "return redis.call('TIME')", readOnly: true },
  // KEYS: results hash, the batch's lock; ARGV: token, TTL in seconds, then job id, result JSON, ...
  saveFenced: {
    numberOfKeys: 2,
    lua: `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1`,
  },
} as const;
type Script = keyof typeof SCRIPTS;
const commandOf = (script: Script) => `probefleet_${script}`;

/** Results a batch may return rather than save (see above). */
export const RESULTS_RETURNED = 1;

export class RunResults {
  private client: RedisClient | undefined;
  /** Redis's clock as last read (ms since the epoch), and when (performance.now()). */
  private clock: { redisMs: number; readAt: number } | undefined;

  constructor(
    /** The BullMQ worker's connection (`worker.getBackend().client`): no connection of our own. */
    private readonly connection: () => Promise<RedisClient>,
    private readonly prefix: string,
    /** How long the results outlive their last write if no report is ever built (job retention). */
    private readonly ttlSeconds: number,
  ) {}

  /** Results already saved for these jobs of a run (a batch taken before); a saved value that is
   * not a valid result for its job is ignored, and the job runs again. */
  async saved(runId: string, jobIds: string[]): Promise<Map<string, ProbeResult>> {
    const values = await (await this.connected()).hmget(reportKeys.results(this.prefix, runId), ...jobIds);
    const saved = new Map<string, ProbeResult>();
    values.forEach((value, i) => {
      if (value === null) return;
      let parsed;
      try {
        parsed = probeResultSchema.safeParse(JSON.parse(value));
      } catch {
        return; // not JSON: as if none was saved
      }
      if (parsed.success && parsed.data.jobId === jobIds[i]) saved.set(jobIds[i]!, parsed.data as ProbeResult);
    });
    return saved;
  }

  /** Saves the results and renews the hash's TTL, if the batch is still this worker's; else
   * nothing is written and LeaseLostError says so. */
  async save(runId: string, results: ProbeResult[], batch: HeldBatch): Promise<void> {
    if (results.length === 0) return;
    const client = await this.connected();
    const fields = results.flatMap((result) => [result.jobId, JSON.stringify(result)]);
    const saved = await client.runCommand(commandOf('saveFenced'), [
      reportKeys.results(this.prefix, runId),
      `${batch.jobKey}:lock`,
      batch.token,
      this.ttlSeconds,
      ...fields,
    ]);
    if (saved !== 1)
      throw new LeaseLostError(
        `the batch's lock is no longer this worker's (expired, or another worker took the batch): ${results.length} result(s) not saved`,
      );
  }

  /**
   * Notes, beside the batch's job, which of its probe jobs is starting: a batch taken again after
   * its worker was lost reads it (runningWhenLost). Not waited for, and a plain SET (a script was
   * ~55 µs of Redis's CPU per job): the note expires on its own (`ttlMs`: past the job's bound and
   * a stall), so one sent late by a worker cut off from Redis leaves nothing for long, and
   * doneRunning removes it when the job ends.
   */
  markRunning(batch: HeldBatch, probeJobId: string, ttlMs: number): void {
    const note = (client: RedisClient) => client.set(runningKey(batch.jobKey), probeJobId, { PX: Math.ceil(ttlMs) });
    // A lost note costs only the precision of a lost worker's label.
    (this.client ? note(this.client) : this.connected().then(note)).catch(() => {});
  }

  /** The noted job is over: its note goes (not waited for). */
  doneRunning(batch: HeldBatch): void {
    this.client?.del(runningKey(batch.jobKey)).catch(() => {});
  }

  /** The probe job a batch's last worker had started last (markRunning), if it said. */
  async runningWhenLost(batchJobKey: string): Promise<string | undefined> {
    return (await (await this.connected()).get(runningKey(batchJobKey))) ?? undefined;
  }

  /**
   * How far Redis's clock is ahead of this machine's (common/redis.ts): a run's deadline is an
   * instant on Redis's clock (the submitter reads it there), so a worker whose own clock is fast or
   * slow still stops a batch at the run's deadline, not minutes early or late. Read once a minute
   * and carried on this machine's monotonic clock in between, so setting the wall clock meanwhile
   * moves nothing.
   */
  async redisClockAheadMs(): Promise<number> {
    if (!this.clock || performance.now() - this.clock.readAt > CLOCK_READ_EVERY_MS) {
      const client = await this.connected();
      const aheadMs = await redisClockAheadMs(() => client.runCommand(commandOf('redisTime'), []));
      const readAt = performance.now();
      this.clock = { readAt, redisMs: Date.now() + aheadMs };
    }
    return this.clock.redisMs + (performance.now() - this.clock.readAt) - Date.now();
  }

  private async connected(): Promise<RedisClient> {
    if (!this.client) {
      const client = await this.connection();
      for (const [script, definition] of Object.entries(SCRIPTS))
        client.defineCommand(commandOf(script as Script), definition);
      this.client = client;
    }
    return this.client;
  }
}
