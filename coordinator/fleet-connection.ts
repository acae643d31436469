// A fleet's Redis as one client under the fleet's prefix, and nothing else: for what reads the
// fleet's keys itself and needs neither the report store nor BullMQ (`schedule list`). The fleet's
// client (fleet-client.ts) is this plus the report store; the Fleet (fleet.ts), plus the queues.
import { prefixProblem } from '../contracts/queues.js';
import type { Logger } from '../common/log.js';
import {
  createRedisClient,
  pingWithin,
  redactRedisUrl,
  refuseOtherRedis,
  warnOnRedisErrors,
  type RedisClient,
  type RedisSettings,
} from '../common/redis.js';
import { DEFAULT_REDIS_TIMEOUT_SECONDS } from '../common/redis-defaults.js';
import { RedisUnreachableError } from '../common/redis-errors.js';
import { BadInputError } from '../common/bad-input.js';
import { settlesWithin } from '../common/settle.js';

/** How long closing waits for the connections to say goodbye before cutting them (and then for
 * the cut: closing takes at most twice this). */
export const FLEET_CLOSE_BOUND_MS = 2_000;

export interface FleetConnectionOptions {
  redis: RedisSettings;
  /** Key prefix with a Redis Cluster hash tag, e.g. "{probefleet}". */
  prefix: string;
  log: Logger;
}

export interface FleetConnection {
  redis: RedisSettings;
  prefix: string;
  /** The fleet's one connection (a Cluster's: one per node). */
  client: RedisClient;
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

/**
 * Closes the client and what shares it (`sharing`: the Fleet's queues and flow producer, which
 * BullMQ leaves open when given a client), bounded whatever Redis does: each says goodbye, within
 * FLEET_CLOSE_BOUND_MS, then the client is cut.
 */
export async function closeFleetConnections(client: RedisClient, sharing: { close(): Promise<void> }[]): Promise<void> {
  // QUIT would wait behind commands queued for a Redis that is away: only say goodbye to one that answers.
  const closing = Promise.allSettled([
    ...sharing.map((q) => q.close()),
    client.status === 'ready' ? client.quit() : client.disconnect(),
  ]);
  await settlesWithin(closing, FLEET_CLOSE_BOUND_MS);
  // A client whose QUIT failed (Redis away: it timed out, or never came) goes on reconnecting,
  // which would keep the process alive, and commands may still be queued for it: cutting it ends
  // both (a no-op once it closed). Once, for all that share it: a queue's own disconnect() cuts
  // the same client, and one per queue piled a listener each on its socket (a warning past ten).
  client.disconnect();
}

/** How briefly Redis is asked again, after a failure, whether it is still there. */
const RECHECK_MS = 1_000;

/**
 * `work` on a fleet, for what ends: Redis answers first (else RedisUnreachableError), and a failure
 * while Redis does not answer is reported as Redis being unreachable, whatever the work was doing.
 * Bad input is passed on as it is.
 */
export async function whileReachable<F extends FleetConnection, T>(
  fleet: F,
  work: (fleet: F) => Promise<T>,
): Promise<T> {
  await fleet.reachable();
  try {
    return await work(fleet);
  } catch (err) {
    if (err instanceof RedisUnreachableError || err instanceof BadInputError) throw err;
    // Not every failure is Redis's: ask it once more (briefly: it answered a moment ago) before blaming it.
    const stillThere = await fleet.reachable(RECHECK_MS).then(
      () => true,
      () => false,
    );
    if (!stillThere) throw fleet.unreachable(`lost while working (${(err as Error).message})`);
    throw err;
  }
}

export function openFleetConnection(options: FleetConnectionOptions): FleetConnection {
  const problem = prefixProblem(options.prefix);
  if (problem) throw new QueuePrefixError(problem);
  const { prefix, log } = options;
  const client = createRedisClient(options.redis, 'probefleet-coordinator');
  const lastError = warnOnRedisErrors(client, log, 'fleet');
  let kindChecked = false;
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
    client,
    async reachable(timeoutMs = options.redis.commandTimeoutMs ?? DEFAULT_REDIS_TIMEOUT_SECONDS * 1000) {
      if (!(await pingWithin(client, timeoutMs)))
        throw unreachable(`no answer within ${Math.round(timeoutMs / 100) / 10} s`);
      if (kindChecked) return;
      await refuseOtherRedis(options.redis, client);
      kindChecked = true;
    },
    unreachable,
    close: () => closeFleetConnections(client, []),
  };
}
