// Redis connection settings from a URL, for BullMQ (queues, workers, flows) and for the
// coordinator's own client (stored reports). redis://[user:password@]host[:port][/db] and
// rediss:// (TLS) are understood here rather than by ioredis, so a CA given beside the URL
// is not silently dropped (ioredis lets URL-derived options win over explicit ones).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { BadInputError } from './bad-input.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface RedisSettings {
  url: string;
  /** PEM of the CA that signed the server's certificate, for rediss:// with a private CA. */
  caPem?: string;
}

export class RedisUrlError extends BadInputError {
  override name = 'RedisUrlError';
}

/** ioredis options for a URL. `maxRetriesPerRequest: null`: commands wait out a reconnect
 * instead of failing (BullMQ requires it for workers and queue events). */
export function redisOptions(settings: RedisSettings): RedisOptions {
  let url: URL;
  try {
    url = new URL(settings.url);
  } catch {
    throw new RedisUrlError(
      `not a valid Redis URL: "${redactRedisUrl(settings.url)}" (expected redis://[user:password@]host[:port][/db] or rediss://...)`,
    );
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new RedisUrlError(`unsupported Redis URL scheme "${url.protocol}" (use redis:// or rediss://)`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0)
    throw new RedisUrlError(`Redis URL database "${url.pathname.slice(1)}" is not a number`);
  return {
    host,
    port: url.port ? Number(url.port) : 6379,
    db,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    // SNI takes host names only; the certificate is still checked against an IP address.
    ...(url.protocol === 'rediss:'
      ? { tls: { ...(isIP(host) ? {} : { servername: host }), ...(settings.caPem ? { ca: settings.caPem } : {}) } }
      : {}),
    maxRetriesPerRequest: null,
  };
}

/** The same options typed for BullMQ (Queue, Worker, QueueEvents, FlowProducer), which
 * builds its own ioredis clients from them; its RedisOptions type is a looser copy of ioredis'. */
export function bullmqConnection(settings: RedisSettings): ConnectionOptions {
  return redisOptions(settings) as ConnectionOptions;
}

/** A client of our own (not BullMQ's), e.g. for stored run reports. */
export function createRedisClient(settings: RedisSettings, connectionName: string): Redis {
  return new Redis({ ...redisOptions(settings), connectionName });
}

/** The URL with its password replaced, for logs and messages. */
export function redactRedisUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}

/** Settings from the CLI's --redis / --redis-ca (or REDIS_URL / REDIS_CA_FILE). */
export function redisSettingsFrom(url: string, caFile?: string): RedisSettings {
  let caPem: string | undefined;
  if (caFile) {
    try {
      caPem = readFileSync(caFile, 'utf8');
    } catch (err) {
      throw new RedisUrlError(
        `cannot read the Redis CA file ${caFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }
  redisOptions({ url }); // refuse a bad URL before anything connects
  return { url, ...(caPem ? { caPem } : {}) };
}
