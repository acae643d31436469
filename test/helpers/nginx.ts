// Debian's nginx (installed by test/services/ensure.sh) for tests whose subject is a real server's
// behaviour: its gzip levels, its Alt-Svc header, the connections it sees. Each test starts its
// own on free loopback ports, with a temp prefix and config (no daemon, no master, access log
// with each request's connection serial number), and stops it. Outside CI a missing nginx skips
// the test with what to run; under CI=true the test fails.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freeLoopbackPort } from '../../common/redis-server.js';
import { onPath } from './prometheus.js';

export const NGINX = '/usr/sbin/nginx';
const nginxMissing: string | false = onPath('nginx')
  ? false
  : 'nginx not found: run `bash test/services/ensure.sh` as root (installs Debian nginx)';
/** Test options: skip outside CI when nginx is missing (under CI the test runs and fails). */
export const needsNginx = { skip: process.env.CI === 'true' ? false : nginxMissing };

export interface NginxServerConfig {
  /** Files served from this server's root: path -> content. */
  files: Record<string, Buffer | string>;
  /** Extra directives inside the server block (`gzip_comp_level 9;`). */
  directives?: string[];
}

export interface Nginx {
  /** Per configured server, its URL (`http://127.0.0.1:PORT`). */
  urls: string[];
  /** Access log lines: `$connection $connection_requests $status $bytes_sent $request`. */
  accessLog(): Promise<{ connection: number; connectionRequests: number; status: number; request: string }[]>;
  stop(): Promise<void>;
}

export async function startNginx(servers: NginxServerConfig[]): Promise<Nginx> {
  if (nginxMissing) assert.fail(nginxMissing);
  const prefix = await mkdtemp(path.join(tmpdir(), 'probefleet-nginx-'));
  const ports: number[] = [];
  const blocks: string[] = [];
  for (const [i, server] of servers.entries()) {
    const root = path.join(prefix, `root${i}`);
    await mkdir(root);
    for (const [file, content] of Object.entries(server.files)) await writeFile(path.join(root, file), content);
    const port = await freeLoopbackPort();
    ports.push(port);
    blocks.push(`server { listen 127.0.0.1:${port}; root ${root}; ${(server.directives ?? []).join(' ')} }`);
  }
  await mkdir(path.join(prefix, 'tmp'));
  const log = path.join(prefix, 'access.log');
  await writeFile(
    path.join(prefix, 'nginx.conf'),
    `daemon off;
master_process off;
worker_processes 1;
error_log ${prefix}/error.log;
pid ${prefix}/nginx.pid;
events { worker_connections 256; }
http {
  types { application/json json; text/plain txt; text/html html; }
  log_format probefleet '$connection $connection_requests $status $bytes_sent "$request"';
  access_log ${log} probefleet;
  client_body_temp_path ${prefix}/tmp; proxy_temp_path ${prefix}/tmp; fastcgi_temp_path ${prefix}/tmp;
  uwsgi_temp_path ${prefix}/tmp; scgi_temp_path ${prefix}/tmp;
  keepalive_requests 10000;
  ${blocks.join('\n  ')}
}
`,
  );
  const child = spawn(NGINX, ['-p', prefix, '-c', path.join(prefix, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    await rm(prefix, { recursive: true, force: true });
  };
  // Ready when every port answers (bounded: 10 s).
  const until = Date.now() + 10_000;
  for (const port of ports) {
    for (;;) {
      if (child.exitCode !== null) {
        await stop();
        assert.fail(`nginx exited while starting: ${stderr}`);
      }
      const answered = await fetch(`http://127.0.0.1:${port}/__ready`)
        .then(() => true)
        .catch(() => false);
      if (answered) break;
      if (Date.now() > until) {
        await stop();
        assert.fail(`nginx did not answer on ${port} within 10 s: ${stderr}`);
      }
      await sleep(50);
    }
  }
  return {
    urls: ports.map((port) => `http://127.0.0.1:${port}`),
    async accessLog() {
      const text = await readFile(log, 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter((line) => line && !line.includes('/__ready'))
        .map((line) => {
          const [connection, connectionRequests, status] = line.split(' ').map(Number);
          return { connection, connectionRequests, status, request: /"(.*)"$/.exec(line)?.[1] ?? '' };
        });
    },
    stop,
  };
}
