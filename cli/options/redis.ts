// The options every command that talks to a fleet's Redis shares: --redis, --redis-ca, --prefix,
// --redis-timeout, and what they say. Light: a command that may not use Redis (compare of files)
// declares them without loading ioredis; connecting is cli/options/fleet.ts.
import type { Argv } from 'yargs';
import { DEFAULT_QUEUE_PREFIX, prefixProblem } from '../../contracts/queues.js';
import { DEFAULT_REDIS_TIMEOUT_SECONDS, DEFAULT_REDIS_URL } from '../../common/redis-defaults.js';
import { jobKeyFromEnv, JobKeyError } from '../../common/job-signature.js';
import { BadArgumentError } from '../../common/bad-input.js';

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

export function prefixOf(args: RedisArgs): string {
  const prefix = args.prefix || process.env.PROBEFLEET_PREFIX || DEFAULT_QUEUE_PREFIX;
  const problem = prefixProblem(prefix);
  if (problem) throw new BadArgumentError(`--prefix: ${problem}`);
  return prefix;
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
