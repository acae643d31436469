// The options every command that talks to a fleet's Redis shares: --redis, --redis-ca, --prefix.
import type { Argv } from 'yargs';
import { DEFAULT_QUEUE_PREFIX, prefixProblem } from '../../contracts/queues.js';
import type { Logger } from '../../common/log.js';
import { DEFAULT_REDIS_URL, redisSettingsFrom, type RedisSettings } from '../../common/redis.js';
import { jobKeyFromEnv, JobKeyError } from '../../common/job-signature.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { BadArgumentError } from '../../common/bad-input.js';

export const redisArgs = (y: Argv) =>
  y
    .option('redis', {
      type: 'string',
      describe: `Redis URL: redis://[user:password@]host[:port][/db] or rediss:// for TLS (default: $REDIS_URL, else ${DEFAULT_REDIS_URL})`,
    })
    .option('redis-ca', {
      type: 'string',
      describe: 'PEM file with the CA of a rediss:// server (default: $REDIS_CA_FILE)',
    })
    .option('prefix', {
      type: 'string',
      describe: `key prefix of every queue, with a Redis Cluster hash tag (default: $PROBEFLEET_PREFIX, else "${DEFAULT_QUEUE_PREFIX}")`,
    });

export interface RedisArgs {
  redis?: string;
  redisCa?: string;
  prefix?: string;
}

/** The Redis URL from --redis or REDIS_URL; undefined when neither is set (or set empty). */
export function redisUrlFrom(args: RedisArgs): string | undefined {
  return args.redis || process.env.REDIS_URL || undefined;
}

export function redisSettingsOf(args: RedisArgs): RedisSettings {
  return redisSettingsFrom(
    redisUrlFrom(args) ?? DEFAULT_REDIS_URL,
    args.redisCa || process.env.REDIS_CA_FILE || undefined,
  );
}

export function prefixOf(args: RedisArgs): string {
  const prefix = args.prefix || process.env.PROBEFLEET_PREFIX || DEFAULT_QUEUE_PREFIX;
  const problem = prefixProblem(prefix);
  if (problem) throw new BadArgumentError(`--prefix: ${problem}`);
  return prefix;
}

export function fleetOf(args: RedisArgs, log: Logger, reportRetentionSeconds?: number): Fleet {
  return openFleet({
    redis: redisSettingsOf(args),
    prefix: prefixOf(args),
    log,
    jobKey: jobKeyOf(),
    ...(reportRetentionSeconds ? { reportRetentionSeconds } : {}),
  });
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
