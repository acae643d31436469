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
// is what it held before batches.
import type { RedisClient } from 'bullmq';
import { reportKeys } from '../contracts/queues.js';
import { probeResultSchema, type ProbeResult } from '../contracts/result.js';
import { msOfRedisTime } from '../common/redis.js';

/** A batch's finished jobs are saved at most this often (and always at its end): a worker lost
 * mid-batch costs about this much measuring, plus the job it was running. */
export const RESULTS_SAVED_EVERY_MS = 1_000;

const REDIS_TIME_COMMAND = 'probefleetRedisTime';

/** Results a batch may return rather than save (see above). */
export const RESULTS_RETURNED = 1;

export class RunResults {
  private client: RedisClient | undefined;

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

  /** Saves the results and renews the hash's TTL. */
  async save(runId: string, results: ProbeResult[]): Promise<void> {
    if (results.length === 0) return;
    const client = await this.connected();
    const key = reportKeys.results(this.prefix, runId);
    await Promise.all([
      client.hset(key, Object.fromEntries(results.map((result) => [result.jobId, JSON.stringify(result)]))),
      client.runCommand('expire', [key, this.ttlSeconds]),
    ]);
  }

  /**
   * How far Redis's clock is ahead of this machine's, in ms (negative: behind), from one TIME
   * read at the midpoint of its round trip. A run's deadline is an instant on Redis's clock (the
   * submitter reads it there), so a worker whose own clock is fast or slow still stops a batch at
   * the run's deadline, not minutes early or late.
   */
  async redisClockAheadMs(): Promise<number> {
    const client = await this.connected();
    const sentAt = Date.now();
    const redisMs = msOfRedisTime(await client.runCommand(REDIS_TIME_COMMAND, []));
    return redisMs - (sentAt + Date.now()) / 2;
  }

  private async connected(): Promise<RedisClient> {
    if (!this.client) {
      const client = await this.connection();
      // BullMQ's client type has no TIME; a one-line script reads it (allowed in scripts since Redis 5).
      client.defineCommand(REDIS_TIME_COMMAND, { numberOfKeys: 0, lua: "return redis.call('TIME')", readOnly: true });
      this.client = client;
    }
    return this.client;
  }
}
