// Redis's errors as a long-running process meets them (worker, coordinator), counted by kind on the
// process's own registry: a Redis that is full shows as a rising
// probefleet_redis_errors_total{kind="oom"} while every write it refuses is retried.
import type { Registry } from 'prom-client';
import { REDIS_ERROR_KINDS, REDIS_METRICS } from '../contracts/metric-names.js';
import { redisErrorKind } from '../common/redis-errors.js';
import { metricsOf } from './prom.js';

/** Counts one error from Redis under its kind. */
export type RedisErrorCounter = (err: unknown) => void;

export function countRedisErrors(registry: Registry): RedisErrorCounter {
  const { errors } = metricsOf(REDIS_METRICS, registry);
  // Every kind from the start, so an alert's increase() has a series to compare with.
  for (const kind of REDIS_ERROR_KINDS) errors.inc({ kind }, 0);
  return (err) => errors.inc({ kind: redisErrorKind(err) });
}
