// The coordinator side's connections to a fleet's Redis: the runs queue, a flow producer, a
// client of its own and the report store, all under one prefix. One object, so commands and
// the coordinator service open and close them the same way.
import { FlowProducer, Queue, type ConnectionOptions } from 'bullmq';
import { prefixProblem, regionQueueName, RUNS_QUEUE, SUBMISSIONS_QUEUE } from '../contracts/queues.js';
import { DEFAULT_RETENTION, type RetentionSettings } from '../contracts/retention.js';
import type { Logger } from '../common/log.js';
import {
  createRedisClient,
  DEFAULT_REDIS_TIMEOUT_SECONDS,
  pingWithin,
  redactRedisUrl,
  refuseOtherKind,
  RedisUnreachableError,
  warnOnRedisErrors,
  type RedisClient,
  type RedisSettings,
} from '../common/redis.js';
import { settlesWithin } from '../common/settle.js';
import { ReportStore } from './report-store.js';

/**
 * Events each queue keeps in its BullMQ event stream. Every completed batch's event carries its
 * return value (at most one probe result: worker/run-results.ts), and nothing of ours reads the
 * stream: kept short, so it is not a second, unbounded copy of the results (BullMQ's default is
 * 10,000 per queue; Redis trims by whole nodes of 100, so 100–200 stay).
 */
export const QUEUE_EVENTS_KEPT = 100;

/** How long closing waits for the connections to say goodbye before cutting them (and then for
 * the cut: closing takes at most twice this). */
export const FLEET_CLOSE_BOUND_MS = 2_000;

export interface FleetOptions {
  redis: RedisSettings;
  /** Key prefix with a Redis Cluster hash tag, e.g. "{probefleet}". */
  prefix: string;
  /** What is kept and for how long: reports here; jobs where they finish. */
  retention?: RetentionSettings;
  log: Logger;
  /** Signs the jobs and schedules this side adds (common/job-signature.ts); unsigned without it. */
  jobKey?: string;
}

export interface Fleet {
  redis: RedisSettings;
  prefix: string;
  retention: RetentionSettings;
  runs: Queue;
  flows: FlowProducer;
  /** The fleet's one connection (a Cluster's: one per node), which its queues and flows share. */
  client: RedisClient;
  store: ReportStore;
  jobKey?: string;
  /** A region's queue (opened on first use, closed with the fleet). */
  regionQueue(region: string): Queue;
  /** The queue of the runs' submission gates (opened on first use, closed with the fleet). */
  submissionsQueue(): Queue;
  /** Resolves once Redis answers; else RedisUnreachableError saying where and why, after `timeoutMs`.
   * The first answer is also checked for a Redis of another kind than the URL says (RedisKindError). */
  reachable(timeoutMs?: number): Promise<void>;
  /** The error that says Redis could not be reached, with the last connection error seen. */
  unreachable(what: string): RedisUnreachableError;
  /** Closes every connection; bounded, whatever Redis does. */
  close(): Promise<void>;
}

export class QueuePrefixError extends Error {
  override name = 'QueuePrefixError';
}

export function openFleet(options: FleetOptions): Fleet {
  const problem = prefixProblem(options.prefix);
  if (problem) throw new QueuePrefixError(problem);
  const { prefix, log } = options;
  const client = createRedisClient(options.redis, 'probefleet-coordinator');
  const lastError = warnOnRedisErrors(client, log, 'fleet');
  // Shared, not copied: BullMQ takes a Cluster only as a client, and leaves a client it was given
  // open (closed below). Every key is under the prefix's hash tag, so a Cluster sends a queue's
  // multi-key commands to one node.
  const connection: ConnectionOptions = client;
  const queueOptions = { connection, prefix, streams: { events: { maxLen: QUEUE_EVENTS_KEPT } } };
  let kindChecked = false;
  /** Queues opened on first use, by name. */
  const queues = new Map<string, Queue>();
  const queueNamed = (name: string) => {
    let queue = queues.get(name);
    if (!queue) {
      queue = new Queue(name, queueOptions);
      queue.on('error', () => {});
      queues.set(name, queue);
    }
    return queue;
  };
  const runs = new Queue(RUNS_QUEUE, queueOptions);
  const flows = new FlowProducer({ connection, prefix });
  // BullMQ's own connections report the same outage as the client: a listener each, logged once.
  runs.on('error', () => {});
  flows.on('error', () => {});
  const where = redactRedisUrl(options.redis.url);
  const unreachable = (what: string) => {
    const cause = lastError();
    return new RedisUnreachableError(
      `cannot reach Redis at ${where}: ${what}${cause ? ` (last error: ${cause})` : ''}`,
    );
  };
  return {
    redis: options.redis,
    prefix,
    retention: options.retention ?? DEFAULT_RETENTION,
    runs,
    flows,
    client,
    ...(options.jobKey ? { jobKey: options.jobKey } : {}),
    store: new ReportStore(client, prefix, (options.retention ?? DEFAULT_RETENTION).reports),
    regionQueue: (region) => queueNamed(regionQueueName(region)),
    submissionsQueue: () => queueNamed(SUBMISSIONS_QUEUE),
    async reachable(timeoutMs = options.redis.commandTimeoutMs ?? DEFAULT_REDIS_TIMEOUT_SECONDS * 1000) {
      if (!(await pingWithin(client, timeoutMs)))
        throw unreachable(`no answer within ${Math.round(timeoutMs / 100) / 10} s`);
      if (kindChecked) return;
      refuseOtherKind(options.redis, await client.info('cluster'));
      kindChecked = true;
    },
    unreachable,
    async close() {
      const open: { close(): Promise<void>; disconnect(): Promise<void> }[] = [runs, flows, ...queues.values()];
      // QUIT would wait behind commands queued for a Redis that is away: only say goodbye to one that answers.
      const closing = Promise.allSettled([
        ...open.map((q) => q.close()),
        client.status === 'ready' ? client.quit() : client.disconnect(),
      ]);
      await settlesWithin(closing, FLEET_CLOSE_BOUND_MS);
      // A BullMQ connection whose QUIT failed (Redis away: it timed out, or never came) stops
      // listening for errors but goes on reconnecting, which would keep the process alive; and
      // commands may still be queued for it. Cutting every connection ends both (a no-op for one
      // that closed). Bounded too: a promise that never settles, once nothing else is pending,
      // would end the process with Node's exit code 13 instead of ours.
      await settlesWithin(Promise.allSettled(open.map((q) => q.disconnect())), FLEET_CLOSE_BOUND_MS);
      client.disconnect();
    },
  };
}
