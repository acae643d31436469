// The shards of a job spread over several workers (the load probe's `workers`) start together:
// each, once taken, joins its job's barrier in Redis (a hash, contracts/queues.ts shardBarrier)
// and asks again every POLL_MS; the shard that makes the count sets the start, START_LEAD_MS
// ahead on Redis's clock, so that the others learn it by their next ask. Each then waits out the
// rest on its own monotonic clock: the instant is said as "in N ms", never as a wall-clock time, so
// the workers' clocks need not agree. When the shards are not all taken within the job's joinMs
// (counted from the first), or a shard comes after the others started, it ends with a result
// saying so (SHARDS_NOT_TOGETHER), not a wait without end.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from 'bullmq';
import type { ProbeError } from '../contracts/common.js';
import type { JobPayload, JobShard } from '../contracts/job.js';
import { reportKeys } from '../contracts/queues.js';

/** How often a waiting shard asks whether the others are in. */
const POLL_MS = 100;
/** How far ahead of the last shard's join the start is: longer than a poll, on a busy machine too. */
const START_LEAD_MS = 500;
/** A shard that learns the start this long after it passed does not run: its load would not be the others'. */
const LATE_MS = 2_000;
/** The barrier outlives the job's bound by this: a shard taken again after its worker was lost still finds it. */
const KEPT_AFTER_BOUND_SECONDS = 3_600;

// KEYS: the barrier; ARGV: shard index, worker name, count, joinMs, lead ms, TTL s.
// Returns {state, ms, joined}: 'start' in ms (negative: passed), 'failed', or 'wait'.
const JOIN_SCRIPT = {
  numberOfKeys: 1,
  lua: `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(redis.call('HGET', KEYS[1], 'deadline'))
if not deadline then
  deadline = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'deadline', deadline)
  redis.call('EXPIRE', KEYS[1], ARGV[6])
end
local start = tonumber(redis.call('HGET', KEYS[1], 'start'))
if not start and now <= deadline then
  redis.call('HSET', KEYS[1], 'shard:' .. ARGV[1], ARGV[2])
  if redis.call('HLEN', KEYS[1]) - 1 >= tonumber(ARGV[3]) then
    start = now + tonumber(ARGV[5])
    redis.call('HSET', KEYS[1], 'start', start)
  end
end
local joined = redis.call('HLEN', KEYS[1]) - 1
if start then return {'start', start - now, joined - 1} end
if now > deadline then return {'failed', 0, joined} end
return {'wait', deadline - now, joined}`,
} as const;
const JOIN_COMMAND = 'probefleet_joinShards';

export class ShardBarrier {
  private client: RedisClient | undefined;
  /** The jobs (partOf) of the shards this worker holds: it takes no second shard of one. */
  private readonly held = new Set<string>();

  constructor(
    /** The BullMQ worker's connection (`worker.getBackend().client`): no connection of our own. */
    private readonly connection: () => Promise<RedisClient>,
    private readonly prefix: string,
    /** Named in the barrier as the worker that took a shard. */
    private readonly workerName: string,
  ) {}

  /** Holds the shard for this worker until `release`; false when it holds another shard of the
   * same job already: another worker must take this one. */
  claim(shard: JobShard): boolean {
    if (this.held.has(shard.partOf)) return false;
    this.held.add(shard.partOf);
    return true;
  }

  /**
   * Joins the job's barrier and resolves at the common start, or with why the shard cannot run
   * with the others. Resolves early when `signal` is aborted (the caller checks it).
   */
  async startTogether(job: JobPayload, shard: JobShard, signal: AbortSignal): Promise<ProbeError | undefined> {
    const client = await this.connected();
    const key = reportKeys.shardBarrier(this.prefix, shard.partOf);
    const ttlSeconds = Math.ceil((shard.joinMs + job.timeLimitMs) / 1000) + KEPT_AFTER_BOUND_SECONDS;
    while (!signal.aborted) {
      const [state, ms, joined] = (await client.runCommand(JOIN_COMMAND, [
        key,
        shard.index,
        this.workerName,
        shard.count,
        shard.joinMs,
        START_LEAD_MS,
        ttlSeconds,
      ])) as [string, number, number];
      if (state === 'start') {
        if (ms < -LATE_MS)
          return {
            code: 'SHARDS_NOT_TOGETHER',
            message: `shard ${shard.index} of ${shard.count} was taken ${(-ms / 1000).toFixed(1)} s after the others had started (its worker was lost and it was taken again, or no worker was free for it in time): it cannot run with them`,
          };
        await pause(ms, signal);
        return undefined;
      }
      if (state === 'failed')
        return {
          code: 'SHARDS_NOT_TOGETHER',
          message:
            `only ${joined} of ${shard.count} workers of region "${job.region}" took a shard of this job within ${shard.joinMs / 1000} s ` +
            `(workers: ${shard.count}): each shard needs a worker of the region of its own, free at the same time; ` +
            'start more workers there, or ask for fewer workers',
        };
      await pause(Math.min(POLL_MS, ms + 1), signal);
    }
    return undefined;
  }

  /** The shard's job is over on this worker. */
  release(shard: JobShard): void {
    this.held.delete(shard.partOf);
  }

  private async connected(): Promise<RedisClient> {
    if (!this.client) {
      const client = await this.connection();
      client.defineCommand(JOIN_COMMAND, JOIN_SCRIPT);
      this.client = client;
    }
    return this.client;
  }
}

/** Waits `ms` (none when not positive), or until `signal` is aborted. */
async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms > 0) await sleep(ms, undefined, { signal }).catch(() => {});
}
