// The options every command that talks to a fleet's Redis shares: --redis, --redis-ca, --prefix,
// --redis-timeout; and how a command that ends uses a fleet (withFleet): bounded in time whatever
// Redis does, an unreachable Redis said as such (exit 4).
import type { Argv } from 'yargs';
import { DEFAULT_QUEUE_PREFIX, prefixProblem } from '../../contracts/queues.js';
import type { RetentionSettings } from '../../contracts/retention.js';
import type { Logger } from '../../common/log.js';
import {
  DEFAULT_REDIS_TIMEOUT_SECONDS,
  DEFAULT_REDIS_URL,
  RedisUnreachableError,
  redisSettingsFrom,
  type RedisSettings,
} from '../../common/redis.js';
import { jobKeyFromEnv, JobKeyError } from '../../common/job-signature.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { BadArgumentError, BadInputError } from '../../common/bad-input.js';

export const redisArgs = (y: Argv) =>
  y
    .option('redis', {
      type: 'string',
      describe: `Redis URL: redis://[user:password@]host[:port][/db]; Sentinel: redis-sentinel://[user:password@]host[:port][,host[:port]...]/NAME[?db=N&sentinelUsername=U&sentinelPassword=P] (the sentinels, port 26379 by default, and the primary's name); Cluster: redis-cluster://[user:password@]host[:port][,host[:port]...] (some of its nodes); rediss://, rediss-sentinel://, rediss-cluster:// for TLS (default: $REDIS_URL, else ${DEFAULT_REDIS_URL})`,
    })
    .option('redis-ca', {
      type: 'string',
      describe: 'PEM file with the CA of a Redis over TLS (rediss...) (default: $REDIS_CA_FILE)',
    })
    .option('prefix', {
      type: 'string',
      describe: `key prefix of every queue, with a Redis Cluster hash tag (default: $PROBEFLEET_PREFIX, else "${DEFAULT_QUEUE_PREFIX}")`,
    });

/** --redis-timeout, for the commands that bound their waits for Redis (a worker waits outages out). */
export const redisTimeoutArg = <T>(y: Argv<T>) =>
  y.option('redis-timeout', {
    type: 'number',
    describe: `seconds to wait for an answer from Redis, connecting included; past it the command says what it could not reach and exits 4 (default: $PROBEFLEET_REDIS_TIMEOUT_SECONDS, else ${DEFAULT_REDIS_TIMEOUT_SECONDS})`,
  });

export interface RedisArgs {
  redis?: string;
  redisCa?: string;
  prefix?: string;
  redisTimeout?: number;
}

/** The Redis URL from --redis or REDIS_URL; undefined when neither is set (or set empty). */
export function redisUrlFrom(args: RedisArgs): string | undefined {
  return args.redis || process.env.REDIS_URL || undefined;
}

/** Whether the Redis URL in use came from the environment (REDIS_URL) rather than --redis: a
 * message about that Redis says so, since the user may not know the variable is set. */
export const redisUrlFromEnvironment = (args: RedisArgs): boolean => !args.redis && Boolean(process.env.REDIS_URL);

/** " (REDIS_URL from the environment)" after a Redis URL that came from there, else nothing. */
export const redisUrlSourceNote = (args: RedisArgs): string =>
  redisUrlFromEnvironment(args) ? ' (REDIS_URL from the environment)' : '';

/** --redis-timeout (or PROBEFLEET_REDIS_TIMEOUT_SECONDS) in milliseconds. */
export function redisTimeoutMsOf(args: RedisArgs): number {
  const fromEnv = process.env.PROBEFLEET_REDIS_TIMEOUT_SECONDS;
  const seconds = args.redisTimeout ?? (fromEnv ? Number(fromEnv) : DEFAULT_REDIS_TIMEOUT_SECONDS);
  if (!(seconds >= 0.1)) throw new BadArgumentError(`--redis-timeout must be at least 0.1 seconds (got ${seconds})`);
  return Math.round(seconds * 1000);
}

/** `bounded`: for a command that ends, every Redis command fails after --redis-timeout. */
export function redisSettingsOf(args: RedisArgs, options: { bounded?: boolean } = {}): RedisSettings {
  const settings = redisSettingsFrom(
    redisUrlFrom(args) ?? DEFAULT_REDIS_URL,
    args.redisCa || process.env.REDIS_CA_FILE || undefined,
  );
  return options.bounded ? { ...settings, commandTimeoutMs: redisTimeoutMsOf(args) } : settings;
}

export function prefixOf(args: RedisArgs): string {
  const prefix = args.prefix || process.env.PROBEFLEET_PREFIX || DEFAULT_QUEUE_PREFIX;
  const problem = prefixProblem(prefix);
  if (problem) throw new BadArgumentError(`--prefix: ${problem}`);
  return prefix;
}

export function fleetOf(
  args: RedisArgs,
  log: Logger,
  options: { bounded?: boolean; retention?: RetentionSettings } = {},
): Fleet {
  return openFleet({
    redis: redisSettingsOf(args, options),
    prefix: prefixOf(args),
    log,
    jobKey: jobKeyOf(),
    ...(options.retention ? { retention: options.retention } : {}),
  });
}

const RECHECK_MS = 1_000;

/**
 * A command that ends, on the fleet: Redis answers first (else RedisUnreachableError, exit 4),
 * every command is bounded by --redis-timeout, and closing is bounded too. A failure while Redis
 * does not answer is reported as Redis being unreachable, whatever the command was doing.
 */
export async function withFleet<T>(
  args: RedisArgs,
  log: Logger,
  work: (fleet: Fleet) => Promise<T>,
  options: { retention?: RetentionSettings } = {},
): Promise<T> {
  const fleet = fleetOf(args, log, { ...options, bounded: true });
  try {
    await fleet.reachable();
    return await work(fleet);
  } catch (err) {
    if (err instanceof RedisUnreachableError) throw withUrlSource(err, args);
    if (err instanceof BadInputError) throw err;
    // Not every failure is Redis's: ask it once more (briefly: it answered a moment ago) before blaming it.
    const stillThere = await fleet.reachable(RECHECK_MS).then(
      () => true,
      () => false,
    );
    if (!stillThere) throw withUrlSource(fleet.unreachable(`lost while working (${(err as Error).message})`), args);
    throw err;
  } finally {
    await fleet.close();
  }
}

/** The error, saying where its URL came from when that was the environment. */
function withUrlSource(err: RedisUnreachableError, args: RedisArgs): RedisUnreachableError {
  if (!redisUrlFromEnvironment(args)) return err;
  return new RedisUnreachableError(
    `${err.message}; the URL is REDIS_URL from the environment (--redis names another; REDIS_URL= unsets it)`,
  );
}

/** PROBEFLEET_JOB_KEY, checked: a key too short to trust is bad input. */
export function jobKeyOf(): string | undefined {
  try {
    return jobKeyFromEnv();
  } catch (err) {
    if (err instanceof JobKeyError) throw new BadArgumentError(err.message);
    throw err;
  }
}
