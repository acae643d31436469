// Debian's dnsmasq as a real resolver between the dns probe and the lab's DNS server: on a free
// loopback port, forwarding every name to the lab (`--no-resolv --server=127.0.0.1#PORT`), with a
// cache of the given size (0: none, so every lookup reaches the lab), in the foreground, stopped by
// its owner. dig (dnsutils) gives a second opinion on its lookup times; stress-ng loads the machine.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { freeLoopbackPort, loopbackPortAccepts } from '../../common/redis-server.js';
import { onPath } from './prometheus.js';

/** Where dnsmasq is: in /usr/sbin, which is not on every user's PATH. */
const DNSMASQ = existsSync('/usr/sbin/dnsmasq') ? '/usr/sbin/dnsmasq' : 'dnsmasq';

/** Test options: skip outside CI when `command` is missing (under CI the test runs and fails). */
export const needs = (command: string, apt: string) => ({
  skip:
    process.env.CI !== 'true' && !onPath(command === 'dnsmasq' ? DNSMASQ : command)
      ? `${command} not installed: apt-get install ${apt} (test/services/ensure.sh does)`
      : false,
});

export interface Dnsmasq {
  port: number;
  /** The resolver as a plan gives it: `127.0.0.1:PORT`. */
  resolver: string;
  stop(): Promise<void>;
}

/** `hostRecords`: names dnsmasq answers itself (`--host-record`), each with its addresses (A and AAAA). */
export async function startDnsmasq(
  upstreamPort: number,
  cacheSize: number,
  hostRecords: Record<string, string[]> = {},
): Promise<Dnsmasq> {
  const port = await freeLoopbackPort();
  const child = spawn(
    DNSMASQ,
    [
      '--keep-in-foreground',
      '--conf-file=/dev/null',
      '--no-resolv',
      '--no-hosts',
      '--no-poll',
      `--server=127.0.0.1#${upstreamPort}`,
      `--cache-size=${cacheSize}`,
      `--port=${port}`,
      ...Object.entries(hostRecords).map(([name, addresses]) => `--host-record=${[name, ...addresses].join(',')}`),
      '--listen-address=127.0.0.1',
      '--bind-interfaces',
      '--pid-file=',
      // As root it would change to the user dnsmasq, which may not exist: it needs no privilege here.
      ...(process.getuid?.() === 0 ? ['--user=root'] : []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const until = Date.now() + 10_000;
  for (;;) {
    if (await loopbackPortAccepts(port)) break;
    if (child.exitCode !== null || Date.now() > until) throw new Error(`dnsmasq did not listen on ${port}: ${stderr}`);
    await sleep(50);
  }
  return {
    port,
    resolver: `127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** dig's own time for one lookup of `name` at `resolver` ("Query time: 41 msec"), in ms. */
export function digQueryMs(resolver: { port: number }, name: string): Promise<number> {
  return new Promise((resolve, reject) =>
    execFile('dig', ['@127.0.0.1', '-p', String(resolver.port), '+tries=1', '+time=5', name, 'A'], (err, stdout) => {
      const ms = /^;; Query time: (\d+) msec$/m.exec(stdout)?.[1];
      if (err || ms === undefined) reject(err ?? new Error(`no query time in dig's output:\n${stdout}`));
      else resolve(Number(ms));
    }),
  );
}

/** `stress-ng --cpu N` beside a measurement, stopped after it. */
export async function withCpuLoad<T>(cpus: number, fn: () => Promise<T>): Promise<T> {
  const child = spawn('stress-ng', ['--cpu', String(cpus), '--quiet'], { stdio: 'ignore' });
  let failed: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (err) => {
      failed = err;
      resolve();
    });
  });
  await sleep(300);
  if (failed) throw new Error(`stress-ng did not start: ${failed.message}`);
  try {
    return await fn();
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  }
}
