// Where a region worker keeps its probe results: the run's results hash (reportKeys.results), job
// id → result JSON, which the finisher reads when it builds the report. A batch's results are
// saved as its jobs finish (at most every RESULTS_SAVED_EVERY_MS, and before the batch completes
// or is handed back), so a batch taken again (its worker lost, a retry, a hand-back) resumes
// after its last saved job instead of measuring everything again. The results are not the
// batch's return value: BullMQ copies return values into each queue's event stream, which keeps
// 100–200 events whatever its maxLen says, and with batches that would be a second copy of
// thousands of results per region in Redis.
import type { Redis } from 'ioredis';
import { reportKeys } from '../contracts/queues.js';
import { probeResultSchema, type ProbeResult } from '../contracts/result.js';

/** A batch's finished jobs are saved at most this often (and always at its end): a worker lost
 * mid-batch costs about this much measuring, plus the job it was running. */
export const RESULTS_SAVED_EVERY_MS = 1_000;

/** HSET and EXPIRE in one command: a MULTI of the two cost a worker twice the CPU (73 against
 * 35 µs a save, measured with ioredis on loopback), once per batch of one job in a small run. */
const SAVE_RESULTS_LUA = `redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('EXPIRE', KEYS[1], ARGV[1])`;

type ResultsClient = Redis & {
  saveResults(key: string, ttlSeconds: number, ...fieldsAndValues: string[]): Promise<unknown>;
};

export class RunResults {
  private readonly client: ResultsClient;

  constructor(
    client: Redis,
    private readonly prefix: string,
    /** How long the results outlive their last write if no report is ever built (job retention). */
    private readonly ttlSeconds: number,
  ) {
    client.defineCommand('saveResults', { numberOfKeys: 1, lua: SAVE_RESULTS_LUA });
    this.client = client as ResultsClient;
  }

  /** Results already saved for these jobs of a run (a batch taken before); a saved value that is
   * not a valid result for its job is ignored, and the job runs again. */
  async saved(runId: string, jobIds: string[]): Promise<Map<string, ProbeResult>> {
    const values = await this.client.hmget(reportKeys.results(this.prefix, runId), ...jobIds);
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

  async save(runId: string, results: ProbeResult[]): Promise<void> {
    if (results.length === 0) return;
    const fieldsAndValues = results.flatMap((result) => [result.jobId, JSON.stringify(result)]);
    await this.client.saveResults(reportKeys.results(this.prefix, runId), this.ttlSeconds, ...fieldsAndValues);
  }
}
