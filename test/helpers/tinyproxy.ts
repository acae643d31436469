// Debian's tinyproxy, an egress HTTP proxy, on a free loopback port with a config of its own,
// in the foreground, stopped by its owner. Its log (LogLevel Connect) lists every CONNECT.
import { spawn } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freeLoopbackPort, loopbackPortAccepts } from '../../common/redis-server.js';
import { onPath } from './prometheus.js';
import { tempDir } from './temp-dir.js';

/** Test options: skip outside CI when tinyproxy is missing (under CI the test runs and fails). */
export const needsTinyproxy = {
  skip:
    process.env.CI !== 'true' && !onPath('tinyproxy')
      ? 'tinyproxy not installed: apt-get install tinyproxy (test/services/ensure.sh does)'
      : false,
};

export interface Tinyproxy {
  url: string;
  /** The CONNECT requests it received, in order ("127.0.0.1:18172"). */
  connects(): Promise<string[]>;
  stop(): Promise<void>;
}

/** `extra`: more config lines (`ConnectPort 443` to refuse tunnels to other ports). */
export async function startTinyproxy(extra: string[] = []): Promise<Tinyproxy> {
  const dir = tempDir('probefleet-tinyproxy-');
  const port = await freeLoopbackPort();
  const log = path.join(dir, 'tinyproxy.log');
  await writeFile(
    path.join(dir, 'tinyproxy.conf'),
    [
      `Port ${port}`,
      'Listen 127.0.0.1',
      'Timeout 30',
      'MaxClients 200',
      'Allow 127.0.0.1',
      'LogLevel Connect',
      `LogFile "${log}"`,
      `PidFile "${path.join(dir, 'tinyproxy.pid')}"`,
      'DisableViaHeader Yes',
      ...extra,
    ].join('\n'),
  );
  const child = spawn('tinyproxy', ['-d', '-c', path.join(dir, 'tinyproxy.conf')], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const until = Date.now() + 10_000;
  for (;;) {
    if (await loopbackPortAccepts(port)) break;
    if (child.exitCode !== null || Date.now() > until) throw new Error(`tinyproxy did not listen on ${port}`);
    await sleep(50);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    async connects() {
      const text = await readFile(log, 'utf8').catch(() => '');
      return [...text.matchAll(/Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g)].map((m) => m[1]);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
