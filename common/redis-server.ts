// A redis-server of our own on a free port of this machine's loopback: the demo's fleet starts
// one, and so do the tests that restart or reconfigure Redis (test/helpers/redis.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { redisOptions } from './redis.js';

/** Whether a Redis server answers PING at the URL (within about a second). */
export async function redisAnswers(url: string, caPem?: string): Promise<boolean> {
  const client = new Redis({
    ...redisOptions({ url, ...(caPem ? { caPem } : {}) }),
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Whether something accepts TCP connections on a port of 127.0.0.1 now (any server, HTTPS too). */
export function loopbackPortAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** A TCP port of 127.0.0.1 that was free a moment ago. */
export async function freeLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface RedisServerOptions {
  /** redis-server (default), or redis-sentinel (its own Debian package), which answers PING too. */
  program?: 'redis-server' | 'redis-sentinel';
  /** Every argument of the program (address, port, persistence...; a sentinel's config file). */
  args: string[];
  /** How clients reach it, to know when it answers. */
  url: string;
  caPem?: string;
  /** Put before `redis-server` on the command line, e.g. a wrapper that ties it to this process. */
  launcher?: string[];
}

export interface RedisServer {
  process: ChildProcess;
  /** SIGTERM, and resolves once it exited (it writes its append-only file first, if it has one). */
  stop(): Promise<void>;
}

/** Starts redis-server and resolves once it answers PING (rejects after 10 s or when it exits). */
export async function startRedisServer(options: RedisServerOptions): Promise<RedisServer> {
  const program = options.program ?? 'redis-server';
  const [command, ...args] = [...(options.launcher ?? []), program, ...options.args];
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  for (let i = 0; i < 100; i++) {
    if (spawnError)
      throw new Error(`cannot start ${command}: ${spawnError.message} (${program}: apt-get install ${program})`);
    if (child.exitCode !== null)
      throw new Error(`${program} exited with ${child.exitCode} (args: ${options.args.join(' ')})`);
    if (await redisAnswers(options.url, options.caPem)) return { process: child, stop };
    await sleep(100);
  }
  await stop();
  throw new Error(`${program} (${options.args.join(' ')}) did not answer at ${options.url} within 10 s`);
}
