// How a command reaches a fleet's Redis from its options (cli/options/redis.ts): the settings, and
// for a command that ends, a fleet bounded in time whatever Redis does, an unreachable Redis said
// as such (exit 4). withFleetConnection opens the client alone (ioredis); withFleetClient the
// report store too; withFleet the queues too, loading BullMQ only then.
import type { RetentionSettings } from '../../contracts/retention.js';
import type { Logger } from '../../common/log.js';
import { redisSettingsFrom, type RedisSettings } from '../../common/redis.js';
import { DEFAULT_REDIS_URL } from '../../common/redis-defaults.js';
import { RedisUnreachableError } from '../../common/redis-errors.js';
import type { FleetClient } from '../../coordinator/fleet-client.js';
import { openFleetConnection, whileReachable, type FleetConnection } from '../../coordinator/fleet-connection.js';
import type { Fleet, FleetOptions } from '../../coordinator/fleet.js';
import {
  jobKeyOf,
  prefixOf,
  redisTimeoutMsOf,
  redisUrlFrom,
  redisUrlFromEnvironment,
  type RedisArgs,
} from './redis.js';

/** `bounded`: for a command that ends, every Redis command fails after --redis-timeout. */
export function redisSettingsOf(args: RedisArgs, options: { bounded?: boolean } = {}): RedisSettings {
  const settings = redisSettingsFrom(
    redisUrlFrom(args) ?? DEFAULT_REDIS_URL,
    args.redisCa || process.env.REDIS_CA_FILE || undefined,
  );
  return options.bounded ? { ...settings, commandTimeoutMs: redisTimeoutMsOf(args) } : settings;
}

export function fleetOptionsOf(
  args: RedisArgs,
  log: Logger,
  options: { bounded?: boolean; retention?: RetentionSettings } = {},
): FleetOptions {
  return {
    redis: redisSettingsOf(args, options),
    prefix: prefixOf(args),
    log,
    jobKey: jobKeyOf(),
    ...(options.retention ? { retention: options.retention } : {}),
  };
}

/** A command that ends, on the fleet's queues (BullMQ): as withFleetConnection, with the report store and the queues open too. */
export async function withFleet<T>(
  args: RedisArgs,
  log: Logger,
  work: (fleet: Fleet) => Promise<T>,
  options: { retention?: RetentionSettings } = {},
): Promise<T> {
  const { openFleet } = await import('../../coordinator/fleet.js');
  return bounded(openFleet(fleetOptionsOf(args, log, { ...options, bounded: true })), args, work);
}

/** A command that ends, on the fleet's client (its connection and the report store): as withFleetConnection. */
export async function withFleetClient<T>(
  args: RedisArgs,
  log: Logger,
  work: (fleet: FleetClient) => Promise<T>,
): Promise<T> {
  const { openFleetClient } = await import('../../coordinator/fleet-client.js');
  return bounded(openFleetClient(fleetOptionsOf(args, log, { bounded: true })), args, work);
}

/**
 * A command that ends, on the fleet's connection: Redis answers first (else RedisUnreachableError,
 * exit 4), every command is bounded by --redis-timeout, and closing is bounded too. A failure
 * while Redis does not answer is reported as Redis being unreachable, whatever the command was doing.
 */
export async function withFleetConnection<T>(
  args: RedisArgs,
  log: Logger,
  work: (fleet: FleetConnection) => Promise<T>,
): Promise<T> {
  return bounded(openFleetConnection(fleetOptionsOf(args, log, { bounded: true })), args, work);
}

async function bounded<F extends FleetConnection, T>(
  fleet: F,
  args: RedisArgs,
  work: (fleet: F) => Promise<T>,
): Promise<T> {
  try {
    return await whileReachable(fleet, work);
  } catch (err) {
    throw withUrlSource(err, args);
  } finally {
    await fleet.close();
  }
}

/** An unreachable Redis's error, saying where its URL came from when that was the environment; any other error as it is. */
export function withUrlSource(err: unknown, args: RedisArgs): unknown {
  if (!(err instanceof RedisUnreachableError) || !redisUrlFromEnvironment(args)) return err;
  return new RedisUnreachableError(
    `${err.message}; the URL is REDIS_URL from the environment (--redis names another; REDIS_URL= unsets it)`,
  );
}
