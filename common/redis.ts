// Redis connection settings from a URL, for BullMQ (queues, workers, flows) and for the
// coordinator's own client (stored reports): one server (redis://, rediss:// for TLS), a primary
// that Sentinel names (redis-sentinel://, rediss-sentinel://) or a Redis Cluster (redis-cluster://,
// rediss-cluster://). URLs are understood here rather than by ioredis, so a CA given beside the URL
// is not silently dropped (ioredis lets URL-derived options win over explicit ones), and because
// ioredis reads neither Sentinel nor Cluster from a URL. Also: how long a command that ends may wait
// for Redis, how an unreachable Redis is told, and a Redis of another kind than its URL says. The
// defaults (redis-defaults.ts) and RedisUnreachableError (redis-errors.ts) are in modules without
// ioredis, for what needs only them (the CLI's top level, its options' help).
import { readFileSync } from 'node:fs';
import { isIP, type Socket } from 'node:net';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import type { ConnectionOptions } from 'bullmq';
import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { BadInputError } from './bad-input.js';
import type { Logger } from './log.js';
import { requireCommonJs } from './require-commonjs.js';
import { settlesWithin } from './settle.js';

const ioredis = requireCommonJs('ioredis') as typeof import('ioredis');
const { default: StandaloneConnector } = requireCommonJs(
  'ioredis/built/connectors/StandaloneConnector.js',
) as typeof import('ioredis/built/connectors/StandaloneConnector.js');

const DEFAULT_PORT = 6379;
const DEFAULT_SENTINEL_PORT = 26379;

export interface RedisSettings {
  url: string;
  /** PEM of the CA that signed the servers' certificates, for TLS with a private CA. */
  caPem?: string;
  /**
   * For processes that end: every command (connecting included) fails after this long without
   * an answer, so an unreachable or hung Redis ends the command instead of hanging it. Unset
   * for the long-running coordinator and workers, whose commands wait out a Redis restart.
   * Never on a BullMQ Worker's connections: their blocking commands wait by design.
   */
  commandTimeoutMs?: number;
}

/** A client of ours: one connection (a server, or the primary Sentinel names), or a Cluster's. */
export type RedisClient = Redis | Cluster;

/** What a Redis URL names, as ioredis takes it. */
export type RedisTarget =
  | { kind: 'server' | 'sentinel'; options: RedisOptions }
  | { kind: 'cluster'; nodes: ClusterNode[]; options: ClusterOptions };

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
class SelfRefusingConnector extends StandaloneConnector {
  // ioredis gives a connector the client's options (typed `unknown` by its constructor type).
  constructor(options: unknown) {
    super(options as RedisOptions);
  }

  override async connect(onError: Parameters<InstanceType<typeof StandaloneConnector>['connect']>[0]) {
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

/** The Redis answering is of another kind than its URL says (a Cluster node reached with redis://). */
export class RedisKindError extends BadInputError {
  override name = 'RedisKindError';
}

const URL_FORMS =
  'redis://[user:password@]host[:port][/db], redis-sentinel://[user:password@]host[:port][,host[:port]...]/NAME[?db=N&sentinelUsername=U&sentinelPassword=P], redis-cluster://[user:password@]host[:port][,host[:port]...]; rediss... for TLS';

/** What a URL names: its scheme and the options it gives ioredis. */
export function redisTarget(settings: RedisSettings): RedisTarget {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(settings.url)?.[1]?.toLowerCase();
  if (scheme === 'redis-sentinel' || scheme === 'rediss-sentinel') return sentinelTarget(settings);
  if (scheme === 'redis-cluster' || scheme === 'rediss-cluster') return clusterTarget(settings);
  return { kind: 'server', options: serverOptions(settings) };
}

/** ioredis options for one server or a Sentinel's primary; a cluster URL has no such options. */
export function redisOptions(settings: RedisSettings): RedisOptions {
  const target = redisTarget(settings);
  if (target.kind === 'cluster')
    throw new RedisUrlError(`${redactRedisUrl(settings.url)} names a Redis Cluster, not one server`);
  return target.options;
}

/** Options every connection shares. `maxRetriesPerRequest: null`: commands wait out a reconnect
 * instead of failing (BullMQ requires it for workers and queue events). */
function connectionOptions(settings: RedisSettings): RedisOptions {
  return {
    maxRetriesPerRequest: null,
    // ioredis waits this long for a socket it is done with to close (2 s by default): a socket to a
    // Redis that is gone may never say so, and its timer would keep a finished command alive.
    disconnectTimeout: 200,
    // A bounded command may also not wait longer than its bound for the connection itself.
    ...(settings.commandTimeoutMs
      ? { commandTimeout: settings.commandTimeoutMs, connectTimeout: settings.commandTimeoutMs }
      : {}),
  };
}

/** TLS for a URL's servers: a CA given beside it, and SNI for a host name (never an IP address;
 * the certificate is still checked against one). */
function tlsOptions(settings: RedisSettings, host?: string): TlsOptions {
  return {
    ...(host && !isIP(host) ? { servername: host } : {}),
    ...(settings.caPem ? { ca: settings.caPem } : {}),
  };
}

function serverOptions(settings: RedisSettings): RedisOptions {
  let url: URL;
  try {
    url = new URL(settings.url);
  } catch {
    throw new RedisUrlError(`not a valid Redis URL: "${redactRedisUrl(settings.url)}" (expected ${URL_FORMS})`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new RedisUrlError(
      `unsupported Redis URL scheme "${url.protocol}" (use redis://, rediss://, redis-sentinel://, rediss-sentinel://, redis-cluster:// or rediss-cluster://)`,
    );
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    host,
    port: url.port ? Number(url.port) : DEFAULT_PORT,
    db: databaseOf(url.pathname.slice(1) || '0'),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.protocol === 'rediss:' ? { tls: tlsOptions(settings, host) } : {}),
    Connector: SelfRefusingConnector,
    ...connectionOptions(settings),
  };
}

function databaseOf(text: string): number {
  const db = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(db))
    throw new RedisUrlError(`Redis URL database "${text}" is not a number`);
  return db;
}

/** The parts of a URL with several hosts (`scheme://[user:password@]host[:port],host[:port]/path?query`),
 * which WHATWG URL parsing refuses. */
interface MultiHostUrl {
  tls: boolean;
  username?: string;
  password?: string;
  hosts: { host: string; port: number }[];
  /** Percent-decoded. */
  path: string;
  query: URLSearchParams;
}

function parseMultiHostUrl(settings: RedisSettings, defaultPort: number): MultiHostUrl {
  const shown = redactRedisUrl(settings.url);
  const parts = /^(rediss?)-[a-z]+:\/\/(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?$/i.exec(settings.url);
  if (!parts) throw new RedisUrlError(`not a valid Redis URL: "${shown}" (expected ${URL_FORMS})`);
  const [, base, userinfo, hostList, path, query] = parts;
  const decode = (text: string, what: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      throw new RedisUrlError(`Redis URL ${what} is not percent-encoded properly: "${shown}"`);
    }
  };
  const decodedPath = decode(path!, 'path');
  const colon = userinfo?.indexOf(':') ?? -1;
  const username = userinfo ? decode(colon < 0 ? userinfo : userinfo.slice(0, colon), 'user') : '';
  const password = userinfo && colon >= 0 ? decode(userinfo.slice(colon + 1), 'password') : '';
  const hosts = hostList!.split(',').map((hostPort) => {
    const url = URL.canParse(`redis://${hostPort}/`) ? new URL(`redis://${hostPort}/`) : undefined;
    if (!url?.hostname || url.username || url.pathname !== '/')
      throw new RedisUrlError(`Redis URL "${shown}": "${hostPort}" is not host[:port] (hosts are separated by commas)`);
    return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port ? Number(url.port) : defaultPort };
  });
  return {
    tls: base!.toLowerCase() === 'rediss',
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    hosts,
    path: decodedPath,
    query: new URLSearchParams(query ?? ''),
  };
}

/** Refuses query parameters other than these: a misspelt one would otherwise be ignored. */
function onlyParameters(settings: RedisSettings, query: URLSearchParams, known: string[]): void {
  for (const name of query.keys()) {
    if (!known.includes(name))
      throw new RedisUrlError(
        `Redis URL "${redactRedisUrl(settings.url)}": unknown parameter "${name}"${known.length > 0 ? ` (known: ${known.join(', ')})` : ' (this kind of URL takes none)'}`,
      );
  }
}

/** redis-sentinel://[user:password@]host[:port][,host[:port]...]/NAME[?db=N&sentinelUsername=U&sentinelPassword=P]:
 * the sentinels (port 26379 unless given), the name of the primary they watch; user and password
 * are the primary's (and its replicas'). rediss-sentinel:// speaks TLS to the sentinels and the primary. */
function sentinelTarget(settings: RedisSettings): RedisTarget {
  const url = parseMultiHostUrl(settings, DEFAULT_SENTINEL_PORT);
  const shown = redactRedisUrl(settings.url);
  const name = /^\/([^/]+)\/?$/.exec(url.path)?.[1];
  if (!name)
    throw new RedisUrlError(
      `Redis URL "${shown}" names no primary: redis-sentinel://host:26379[,host:26379...]/NAME, with NAME as the sentinels know it (sentinel monitor NAME ...)`,
    );
  onlyParameters(settings, url.query, ['db', 'sentinelUsername', 'sentinelPassword']);
  const sentinelUsername = url.query.get('sentinelUsername');
  const sentinelPassword = url.query.get('sentinelPassword');
  return {
    kind: 'sentinel',
    options: {
      sentinels: url.hosts,
      name,
      db: databaseOf(url.query.get('db') ?? '0'),
      ...(url.username ? { username: url.username } : {}),
      ...(url.password ? { password: url.password } : {}),
      ...(sentinelUsername ? { sentinelUsername } : {}),
      ...(sentinelPassword ? { sentinelPassword } : {}),
      ...(url.tls
        ? { tls: tlsOptions(settings), sentinelTLS: tlsOptions(settings), enableTLSForSentinelMode: true }
        : {}),
      // Reconnect (asking the sentinels for the primary) as soon as they announce a new one
      // (+switch-master): a primary that a planned switch (SENTINEL FAILOVER) replaced goes on
      // taking writes until the sentinels demote it, seconds later, and those writes are lost.
      failoverDetector: true,
      // A demoted primary answers writes with READONLY: reconnect, and send the command again.
      reconnectOnError: reconnectOnReadonly,
      ...connectionOptions(settings),
    },
  };
}

/** ioredis `reconnectOnError`: 2 reconnects and sends the command again. */
export function reconnectOnReadonly(err: Error): 2 | false {
  return err.message.startsWith('READONLY') ? 2 : false;
}

/** redis-cluster://[user:password@]host[:port][,host[:port]...]: nodes to learn the cluster from
 * (any of its nodes will do; more than one in case one is down). rediss-cluster:// speaks TLS. */
function clusterTarget(settings: RedisSettings): RedisTarget {
  const url = parseMultiHostUrl(settings, DEFAULT_PORT);
  if (url.path !== '' && url.path !== '/')
    throw new RedisUrlError(
      `Redis URL "${redactRedisUrl(settings.url)}": a Redis Cluster has no databases to choose ("${url.path}"); give its nodes only`,
    );
  onlyParameters(settings, url.query, []);
  return {
    kind: 'cluster',
    nodes: url.hosts,
    options: {
      redisOptions: {
        ...(url.username ? { username: url.username } : {}),
        ...(url.password ? { password: url.password } : {}),
        ...(url.tls ? { tls: tlsOptions(settings) } : {}),
        // Each node's connection is one server's (a Sentinel's is not: ioredis's own connector finds its primary).
        Connector: SelfRefusingConnector,
        ...connectionOptions(settings),
      },
    },
  };
}

/**
 * For BullMQ, which connects by itself: options for a server or a Sentinel's primary; for a Cluster,
 * a client that a Worker copies for each of its connections and never connects itself (BullMQ takes
 * a Cluster only as a client). A Queue or FlowProducer would use that client as it is and leave it
 * open: give those a client of yours instead (createRedisClient), and close it.
 */
export function bullmqConnection(settings: RedisSettings): ConnectionOptions {
  const target = redisTarget(settings);
  if (target.kind !== 'cluster') return target.options as ConnectionOptions;
  const template = new ioredis.Cluster(target.nodes, { ...target.options, lazyConnect: true });
  // Its copies connect at once and wait out a cluster that is down; a lazy copy, which BullMQ would
  // connect, rejects at the first failure and the worker would never start.
  template.duplicate = (nodes: ClusterNode[] = [], options: ClusterOptions = {}) =>
    new ioredis.Cluster(nodes.length > 0 ? nodes : target.nodes, {
      ...target.options,
      ...options,
      redisOptions: { ...target.options.redisOptions, ...options.redisOptions },
    });
  return template;
}

/** For a BullMQ Worker: never a command timeout, which would cut its blocking waits for jobs. */
export function bullmqWorkerConnection(settings: RedisSettings): ConnectionOptions {
  return bullmqConnection({ url: settings.url, ...(settings.caPem ? { caPem: settings.caPem } : {}) });
}

/** A client of our own (not BullMQ's), e.g. for stored run reports. */
export function createRedisClient(settings: RedisSettings, connectionName: string): RedisClient {
  const target = redisTarget(settings);
  if (target.kind === 'cluster')
    return new ioredis.Cluster(target.nodes, {
      ...target.options,
      redisOptions: { ...target.options.redisOptions, connectionName },
    });
  return reconnectWhenCutShort(new ioredis.Redis({ ...target.options, connectionName }));
}

/** ioredis's message for a command or connect on a connection that is closed. */
const CONNECTION_CLOSED = 'Connection is closed.';

/** How long a client ioredis ended waits before connecting again (a connector that fails at once
 * would otherwise spin). */
const RECONNECT_AFTER_END_MS = 200;

/**
 * ioredis ends a client for good when its connector's connect is cut short, and every command
 * fails from then on ("Connection is closed."): a failover announced (+switch-master, which
 * `failoverDetector` answers by cutting the connector) while the client, having lost the old
 * primary, asks a sentinel for the new one. A client ended so, not closed by its owner, connects
 * again. test/integration/redis-sentinel.test.ts cuts a connect short as the detector does.
 */
export function reconnectWhenCutShort(client: Redis): Redis {
  // What ioredis says just before it ends a client so: the connect's rejection, while connecting
  // (a connect its owner cut short, closing the client, says nothing).
  let cutShort = false;
  client.on('error', (err: Error) => {
    cutShort = client.status === 'connecting' && err.message === CONNECTION_CLOSED;
  });
  client.on('end', () => {
    if (!cutShort) return;
    cutShort = false;
    setTimeout(() => {
      if (client.status === 'end') client.connect().catch(() => {}); // its errors reach its listeners
    }, RECONNECT_AFTER_END_MS).unref();
  });
  return client;
}

/**
 * Refuses a Redis of another kind than the URL says, from its INFO: a Cluster node reached with
 * redis:// or redis-sentinel:// answers MOVED for every key it does not own (BullMQ would retry
 * those for ever), and works for the others only until a failover or a resharding moves them.
 */
export function refuseOtherKind(settings: RedisSettings, info: string): void {
  const { kind } = redisTarget(settings);
  if (kind === 'cluster' || !/^cluster_enabled:1\s*$/m.test(info)) return;
  const url = redactRedisUrl(settings.url);
  const nodes = kind === 'server' ? (/^[a-z]+:\/\/(?:[^@/]*@)?([^/?#]*)/i.exec(url)?.[1] ?? 'host:port') : 'host:port';
  throw new RedisKindError(
    `the Redis at ${url} is a node of a Redis Cluster: use redis-cluster://${nodes}[,host:port...] (rediss-cluster:// for TLS) naming some of its nodes; a ${kind === 'server' ? 'single-server' : 'Sentinel'} URL reaches only the keys that one node owns`,
  );
}

/**
 * Refuses the Redis a fleet process reached, once, before relying on it, when it is not what the
 * URL names: a node of a Cluster for another kind of URL (refuseOtherKind), or a server without the
 * URL's database. ioredis tells the latter only as an error event, then goes on in database 0,
 * where every key would be read and written: a SELECT of its own fails instead.
 */
export async function refuseOtherRedis(settings: RedisSettings, client: RedisClient): Promise<void> {
  refuseOtherKind(settings, await client.info('cluster'));
  const target = redisTarget(settings);
  const db = target.kind === 'cluster' ? 0 : (target.options.db ?? 0);
  if (db === 0) return;
  try {
    await (client as Redis).select(db);
  } catch (err) {
    const message = (err as Error).message;
    if (!message.includes('DB index is out of range')) throw err;
    throw new RedisKindError(
      `the Redis at ${redactRedisUrl(settings.url)} has no database ${db} (${message}): name one below its \`databases\` setting, 0 by default`,
    );
  }
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
export function warnOnRedisErrors(
  source: ErrorSource,
  log: Logger,
  what: string,
  /** Told of every error, repeats included (metrics/redis-metrics.ts counts them). */
  count?: (err: Error) => void,
): () => string | undefined {
  let last: string | undefined;
  let loggedAt = 0;
  let repeats = 0;
  source.on('error', (err) => {
    count?.(err);
    // A Cluster's "Failed to refresh slots cache." says why only in the last node's error.
    const cause = (err as { lastNodeError?: Error }).lastNodeError?.message;
    const message = `${err.message || String(err)}${cause ? ` (${cause})` : ''}`;
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
export async function pingWithin(client: RedisClient, timeoutMs: number): Promise<boolean> {
  let answer: string | undefined;
  const ping = client.ping().then(
    (pong) => (answer = pong),
    () => undefined,
  );
  await settlesWithin(ping, timeoutMs);
  return answer === 'PONG';
}

/** Replicas connected to the Redis behind the client (INFO replication), for a write to wait for:
 * 0 when it has none, and when INFO is refused (an ACL without it: then nothing is waited for). */
export async function connectedReplicas(client: Pick<Redis, 'info'>): Promise<number> {
  const info = await client.info('replication').catch(() => '');
  return Number(/^connected_slaves:(\d+)\s*$/m.exec(info)?.[1] ?? 0);
}

/** Now on Redis's clock (TIME): the one clock every process of a fleet shares, so run deadlines
 * do not depend on the machines' clocks agreeing. */
export async function redisNow(client: RedisClient): Promise<Date> {
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
  return url
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, '$1***@')
    .replace(/([?&]sentinelPassword=)[^&#]*/, '$1***');
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
  redisTarget({ url }); // refuse a bad URL before anything connects
  return { url, ...(caPem ? { caPem } : {}) };
}

/** How a Redis server keeps its data across a restart. */
export interface PersistenceCheck {
  /** aof: every write logged (appendonly); rdb: snapshots only; none; unknown: could not tell. */
  persistence: 'aof' | 'rdb' | 'none' | 'unknown';
  /** What was read, for the log. */
  detail: string;
}

/** From the weakest to the strongest. */
const PERSISTENCE_ORDER: PersistenceCheck['persistence'][] = ['none', 'unknown', 'rdb', 'aof'];

/**
 * Reads `CONFIG GET appendonly` and `save`; where CONFIG is refused (an ACL user without
 * @dangerous, most managed Redis), INFO persistence still says whether AOF is on. On a Cluster,
 * every node the client knows is read (the primaries, and the replicas CLUSTER SLOTS lists), and
 * the weakest found is the answer: a replica becomes a primary at a failover.
 */
export async function checkPersistence(client: RedisClient): Promise<PersistenceCheck> {
  if (!(client instanceof ioredis.Cluster)) return checkServerPersistence(client);
  const nodes = client.nodes('all');
  if (nodes.length === 0) return { persistence: 'unknown', detail: 'no node of the cluster known yet' };
  const checks = await Promise.all(
    nodes.map(async (node) => ({
      node: `${node.options.host}:${node.options.port}`,
      ...(await checkServerPersistence(node)),
    })),
  );
  const weakest = checks.reduce((a, b) =>
    PERSISTENCE_ORDER.indexOf(b.persistence) < PERSISTENCE_ORDER.indexOf(a.persistence) ? b : a,
  );
  return { persistence: weakest.persistence, detail: checks.map((c) => `${c.node}: ${c.detail}`).join('; ') };
}

async function checkServerPersistence(client: Redis): Promise<PersistenceCheck> {
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
