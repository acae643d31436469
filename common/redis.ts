// Redis connection settings from a URL, for BullMQ (queues, workers, flows) and for the
// coordinator's own client (stored reports). redis://[user:password@]host[:port][/db] and
// rediss:// (TLS) are understood here rather than by ioredis, so a CA given beside the URL
// is not silently dropped (ioredis lets URL-derived options win over explicit ones).
// Also: how long a command that ends may wait for Redis, and how an unreachable Redis is told.
import { readFileSync } from 'node:fs';
import { isIP, type Socket } from 'node:net';
import type { ConnectionOptions } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import standaloneConnector from 'ioredis/built/connectors/StandaloneConnector.js';
import { BadInputError } from './bad-input.js';
import type { Logger } from './log.js';
import { settlesWithin } from './settle.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** How long a command that ends (`run`, `runs`, `schedule`) waits for an answer from Redis. */
export const DEFAULT_REDIS_TIMEOUT_SECONDS = 10;

export interface RedisSettings {
  url: string;
  /** PEM of the CA that signed the server's certificate, for rediss:// with a private CA. */
  caPem?: string;
  /**
   * For processes that end: every command (connecting included) fails after this long without
   * an answer, so an unreachable or hung Redis ends the command instead of hanging it. Unset
   * for the long-running coordinator and workers, whose commands wait out a Redis restart.
   * Never on a BullMQ Worker's connections: their blocking commands wait by design.
   */
  commandTimeoutMs?: number;
}

/** Redis did not answer: the command could not do its work. The CLI exits 4 on it (cli/exit-codes.ts). */
export class RedisUnreachableError extends Error {
  override name = 'RedisUnreachableError';
  readonly code = 'REDIS_UNREACHABLE';
}

export class RedisUrlError extends BadInputError {
  override name = 'RedisUrlError';
}

/** Said of a connection that reached this process itself, not a Redis. */
export const SELF_CONNECTION = 'connected to itself';

/**
 * ioredis's connector for one server, refusing a connection to itself: with nothing listening on a
 * local port of the ephemeral range, a connect to it can be given that very port as its source, and
 * TCP joins the socket to itself. The client would read its own commands back as replies (an INFO
 * reply that is no text: `doc.split is not a function`, in a loop). Refused at once instead, as an
 * error that names it; the client tries again, on another source port.
 */
class SelfRefusingConnector extends standaloneConnector.default {
  // ioredis gives a connector the client's options (typed `unknown` by its constructor type).
  constructor(options: unknown) {
    super(options as RedisOptions);
  }

  override async connect(onError: Parameters<InstanceType<typeof standaloneConnector.default>['connect']>[0]) {
    const stream = await super.connect(onError);
    stream.once('connect', () => {
      const socket = stream as Socket;
      if (socket.localPort === socket.remotePort && socket.localAddress === socket.remoteAddress)
        socket.destroy(
          new Error(
            `${SELF_CONNECTION}: nothing listens at ${socket.remoteAddress}:${socket.remotePort}, and the connection was given that same address as its source`,
          ),
        );
    });
    return stream;
  }
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
    Connector: SelfRefusingConnector,
    // ioredis waits this long for a socket it is done with to close (2 s by default): a socket to a
    // Redis that is gone may never say so, and its timer would keep a finished command alive.
    disconnectTimeout: 200,
    // A bounded command may also not wait longer than its bound for the connection itself.
    ...(settings.commandTimeoutMs
      ? { commandTimeout: settings.commandTimeoutMs, connectTimeout: settings.commandTimeoutMs }
      : {}),
  };
}

/** The same options typed for BullMQ (Queue, QueueEvents, FlowProducer), which builds its own
 * ioredis clients from them; its RedisOptions type is a looser copy of ioredis'. */
export function bullmqConnection(settings: RedisSettings): ConnectionOptions {
  return redisOptions(settings) as ConnectionOptions;
}

/** For a BullMQ Worker: never a command timeout, which would cut its blocking waits for jobs. */
export function bullmqWorkerConnection(settings: RedisSettings): ConnectionOptions {
  return bullmqConnection({ url: settings.url, ...(settings.caPem ? { caPem: settings.caPem } : {}) });
}

/** A client of our own (not BullMQ's), e.g. for stored run reports. */
export function createRedisClient(settings: RedisSettings, connectionName: string): Redis {
  return new Redis({ ...redisOptions(settings), connectionName });
}

/** What emits a Redis connection's errors: an ioredis client, or a BullMQ queue, worker or flow producer. */
interface ErrorSource {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** How often the same Redis error is logged again while it lasts. */
const REPEAT_EVERY_MS = 60_000;

/**
 * Logs a connection's errors at warn (a connection lost, which ioredis retries; for a BullMQ
 * worker also a lock it could not renew): each new one at once, the same one again at most once
 * a minute with how often it came (ioredis reports every reconnect attempt, several a second).
 * A listener is needed anyway: an 'error' event without one would end the process.
 * Returns the last error seen, for messages.
 */
export function warnOnRedisErrors(source: ErrorSource, log: Logger, what: string): () => string | undefined {
  let last: string | undefined;
  let loggedAt = 0;
  let repeats = 0;
  source.on('error', (err) => {
    const message = err.message || String(err);
    const now = Date.now();
    if (message === last && now - loggedAt < REPEAT_EVERY_MS) {
      repeats++;
      return;
    }
    log.warn({ err: message, ...(repeats > 0 ? { repeats } : {}) }, `${what}: redis error`);
    last = message;
    loggedAt = now;
    repeats = 0;
  });
  return () => last;
}

/** Whether the client answers PING within `timeoutMs` (it reconnects meanwhile if it must). */
export async function pingWithin(client: Redis, timeoutMs: number): Promise<boolean> {
  let answer: string | undefined;
  const ping = client.ping().then(
    (pong) => (answer = pong),
    () => undefined,
  );
  await settlesWithin(ping, timeoutMs);
  return answer === 'PONG';
}

/** Now on Redis's clock (TIME): the one clock every process of a fleet shares, so run deadlines
 * do not depend on the machines' clocks agreeing. */
export async function redisNow(client: Redis): Promise<Date> {
  return new Date(msOfRedisTime(await client.time()));
}

/**
 * How far Redis's clock is ahead of this machine's, in ms (negative: behind), from one TIME read
 * (`readTime`) taken at the midpoint of its round trip.
 */
export async function redisClockAheadMs(readTime: () => Promise<readonly (string | number)[]>): Promise<number> {
  const sentAt = Date.now();
  const redisMs = msOfRedisTime(await readTime());
  return redisMs - (sentAt + Date.now()) / 2;
}

/** Milliseconds since the epoch from a TIME reply (seconds, microseconds). */
export function msOfRedisTime([seconds, micros]: readonly (string | number)[]): number {
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
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

/** How a Redis server keeps its data across a restart. */
export interface PersistenceCheck {
  /** aof: every write logged (appendonly); rdb: snapshots only; none; unknown: could not tell. */
  persistence: 'aof' | 'rdb' | 'none' | 'unknown';
  /** What was read, for the log. */
  detail: string;
}

/** Reads `CONFIG GET appendonly` and `save`; where CONFIG is refused (an ACL user without
 * @dangerous, most managed Redis), INFO persistence still says whether AOF is on. */
export async function checkPersistence(client: Redis): Promise<PersistenceCheck> {
  let refused: string;
  try {
    const value = async (name: string) => ((await client.config('GET', name)) as string[])[1] ?? '';
    const [appendonly, save] = [await value('appendonly'), await value('save')];
    const detail = `appendonly ${appendonly}, save "${save}"`;
    if (appendonly === 'yes') return { persistence: 'aof', detail };
    return { persistence: save.trim() ? 'rdb' : 'none', detail };
  } catch (err) {
    refused = (err as Error).message;
  }
  const info = await client.info('persistence').catch(() => '');
  if (/^aof_enabled:1\s*$/m.test(info))
    return { persistence: 'aof', detail: `INFO aof_enabled:1 (CONFIG GET: ${refused})` };
  return {
    persistence: 'unknown',
    detail: `CONFIG GET refused (${refused}); INFO says AOF is ${/^aof_enabled:0\s*$/m.test(info) ? 'off' : 'unknown'}`,
  };
}
