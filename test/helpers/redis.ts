// Redis for tests: the shared one at REDIS_URL (each test on its own key prefix, removed after),
// or a redis-server of the test's own on a free port for tests that restart or reconfigure it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { redisOptions } from '../../common/redis.js';
import { DEFAULT_REDIS_URL } from '../../common/redis-defaults.js';
import { freeLoopbackPort, redisAnswers, startRedisServer, type RedisServer } from '../../common/redis-server.js';
import { tempDir } from './temp-dir.js';

export const TEST_REDIS_URL = process.env.REDIS_URL || DEFAULT_REDIS_URL;

export const answers = redisAnswers;

/**
 * Why Redis-backed tests cannot run, or false. Outside CI they skip with this message; under
 * CI=true `requireRedis` fails them instead, loudly.
 */
export const redisMissing: string | false = (await answers(TEST_REDIS_URL))
  ? false
  : `Redis does not answer at ${TEST_REDIS_URL}: run \`bash test/services/ensure.sh\` (starts redis-server, installing it when missing)`;

/** Test options: skip outside CI when Redis is missing (under CI the test runs and fails). */
export const needsRedis = { skip: process.env.CI === 'true' ? false : redisMissing };

export function requireRedis(): void {
  if (redisMissing) assert.fail(redisMissing);
}

/** A fresh key prefix with its own hash tag, so tests never see each other's queues. */
export function testPrefix(): string {
  return `{pftest-${randomUUID().slice(0, 8)}}`;
}

/** Deletes every key under the prefix. */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const client = new Redis(redisOptions({ url }));
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

export const freePort = freeLoopbackPort;

export interface OwnRedis {
  url: string;
  port: number;
  dir: string;
  /** Stops the server (SIGTERM: it writes its append-only file) and starts it again on the same port and data. */
  restart(downMs?: number): Promise<void>;
  /** kill -9: the server ends at once, clients see their connections reset. */
  kill(): Promise<void>;
  /** Starts it again (after kill) on the same port and data. */
  start(): Promise<void>;
  /** Its INFO field (e.g. used_memory), read with a client of its own. */
  info(field: string): Promise<string | undefined>;
  stop(): Promise<void>;
}

export interface OwnRedisOptions {
  /** Arguments besides address, data and persistence, given the server's port and data folder. */
  args?: (port: number, dir: string) => string[];
  /** Writes what the server needs into its data folder (certificates) before it starts. */
  prepare?: (dir: string) => Promise<void>;
  /** How clients reach it (default redis://127.0.0.1:PORT). */
  url?: (port: number) => string;
  caPem?: string;
  /** aof (default): every write logged, fsync always; rdb: snapshots only; none. */
  persistence?: 'aof' | 'rdb' | 'none';
}

const PERSISTENCE_ARGS = {
  aof: ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always'],
  rdb: ['--save', '3600 1', '--appendonly', 'no'],
  none: ['--save', '', '--appendonly', 'no'],
};

/** A redis-server of the test's own, persisting every write unless told otherwise. */
export async function startOwnRedis(options: OwnRedisOptions = {}): Promise<OwnRedis> {
  const dir = tempDir('probefleet-redis-');
  const port = await freePort();
  const url = options.url?.(port) ?? `redis://127.0.0.1:${port}`;
  const args = [
    '--bind',
    '127.0.0.1',
    '--port',
    String(port),
    '--dir',
    dir,
    ...PERSISTENCE_ARGS[options.persistence ?? 'aof'],
    ...(options.args?.(port, dir) ?? []),
  ];
  await options.prepare?.(dir);
  let server: RedisServer | undefined;
  const start = async () => {
    server = await startRedisServer({ args, url, ...(options.caPem ? { caPem: options.caPem } : {}) });
  };
  const stop = async () => server?.stop();
  await start();
  return {
    url,
    port,
    dir,
    async restart(downMs = 500) {
      await stop();
      await sleep(downMs);
      await start();
    },
    async kill() {
      const child = server?.process;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    start,
    async info(field) {
      const client = new Redis({ ...redisOptions({ url, ...(options.caPem ? { caPem: options.caPem } : {}) }) });
      try {
        const text = await client.info();
        return text.match(new RegExp(`^${field}:(.*?)\\s*$`, 'm'))?.[1];
      } finally {
        client.disconnect();
      }
    },
    async stop() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
