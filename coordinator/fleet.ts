// The coordinator side's connections to a fleet's Redis: the runs queue, a flow producer, a
// client of its own and the report store, all under one prefix. One object, so commands and
// the coordinator service open and close them the same way.
import { FlowProducer, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { prefixProblem, regionQueueName, RUNS_QUEUE } from '../contracts/queues.js';
import type { Logger } from '../common/log.js';
import { bullmqConnection, createRedisClient, type RedisSettings } from '../common/redis.js';
import { ReportStore } from './report-store.js';

export interface FleetOptions {
  redis: RedisSettings;
  /** Key prefix with a Redis Cluster hash tag, e.g. "{probefleet}". */
  prefix: string;
  /** How long stored reports are kept. */
  reportRetentionSeconds?: number;
  log: Logger;
  /** Signs the jobs and schedules this side adds (common/job-signature.ts); unsigned without it. */
  jobKey?: string;
}

export interface Fleet {
  redis: RedisSettings;
  prefix: string;
  runs: Queue;
  flows: FlowProducer;
  client: Redis;
  store: ReportStore;
  jobKey?: string;
  /** A region's queue (opened on first use, closed with the fleet). */
  regionQueue(region: string): Queue;
  close(): Promise<void>;
}

export class QueuePrefixError extends Error {
  override name = 'QueuePrefixError';
}

export function openFleet(options: FleetOptions): Fleet {
  const problem = prefixProblem(options.prefix);
  if (problem) throw new QueuePrefixError(problem);
  const connection = bullmqConnection(options.redis);
  const { prefix } = options;
  const client = createRedisClient(options.redis, 'probefleet-coordinator');
  // ioredis reconnects by itself; without a listener an 'error' event would end the process.
  const onError = (err: Error) => options.log.debug({ err: err.message }, 'redis connection error (reconnecting)');
  client.on('error', onError);
  const regionQueues = new Map<string, Queue>();
  const runs = new Queue(RUNS_QUEUE, { connection, prefix });
  const flows = new FlowProducer({ connection, prefix });
  runs.on('error', onError);
  flows.on('error', onError);
  return {
    redis: options.redis,
    prefix,
    runs,
    flows,
    client,
    ...(options.jobKey ? { jobKey: options.jobKey } : {}),
    store: new ReportStore(client, prefix, options.reportRetentionSeconds),
    regionQueue(region) {
      let queue = regionQueues.get(region);
      if (!queue) {
        queue = new Queue(regionQueueName(region), { connection, prefix });
        queue.on('error', onError);
        regionQueues.set(region, queue);
      }
      return queue;
    },
    async close() {
      await Promise.allSettled([runs.close(), flows.close(), ...[...regionQueues.values()].map((q) => q.close())]);
      client.disconnect();
    },
  };
}
