// Debian's nginx on free loopback ports, with a temp prefix and config of its own (no daemon,
// no master, one worker, access log with each request's connection serial number), stopped by
// its owner. Tests whose subject is a real server's behaviour start one (test/helpers/nginx.ts),
// and so does the benchmark, as a target fast enough not to hide a client's own cost.
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freeLoopbackPort, loopbackPortAccepts } from './redis-server.js';

export const NGINX = '/usr/sbin/nginx';

/** Why nginx cannot be started here (with how to install it), or false when it can. */
export function nginxMissing(): string | false {
  try {
    execFileSync(NGINX, ['-v'], { stdio: 'ignore' });
    return false;
  } catch {
    return `${NGINX} not found: install Debian's nginx (apt-get install -y nginx; test/services/ensure.sh does)`;
  }
}

export interface NginxServerConfig {
  /** Files served from this server's root: path -> content. */
  files: Record<string, Buffer | string>;
  /** Extra directives inside the server block (`gzip_comp_level 9;`). */
  directives?: string[];
  /** Serve HTTPS with this certificate and key (PEM); with `clientCa`, ask clients for a
   * certificate it signed (`ssl_verify_client`: `on` requires one, `optional` takes one). */
  tls?: { certPem: string; keyPem: string; clientCa?: string; verifyClient?: 'on' | 'optional'; http2?: boolean };
  /** Listen on [::1] too, at the same port: a dual-stack server. */
  ipv6?: boolean;
}

export interface Nginx {
  /** The nginx process (one worker, no master): its CPU time is the server's. */
  pid: number;
  /** Per configured server, its URL (`http://127.0.0.1:PORT`). */
  urls: string[];
  /** Access log lines: `$connection $connection_requests $status $bytes_sent $server_addr $request`. */
  accessLog(): Promise<
    { connection: number; connectionRequests: number; status: number; serverAddress: string; request: string }[]
  >;
  stop(): Promise<void>;
}

export async function startNginx(servers: NginxServerConfig[]): Promise<Nginx> {
  const missing = nginxMissing();
  if (missing) throw new Error(missing);
  const prefix = await mkdtemp(path.join(tmpdir(), 'probefleet-nginx-'));
  const ports: number[] = [];
  const blocks: string[] = [];
  for (const [i, server] of servers.entries()) {
    const root = path.join(prefix, `root${i}`);
    await mkdir(root);
    for (const [file, content] of Object.entries(server.files)) await writeFile(path.join(root, file), content);
    const port = await freeLoopbackPort();
    ports.push(port);
    const tls: string[] = [];
    if (server.tls) {
      await writeFile(path.join(prefix, `server${i}.pem`), server.tls.certPem);
      await writeFile(path.join(prefix, `server${i}.key`), server.tls.keyPem, { mode: 0o600 });
      // Debian 12's nginx 1.22 offers TLS 1.3 only when told (its default is 1.3 from 1.23.4 on).
      tls.push(
        `ssl_certificate ${prefix}/server${i}.pem;`,
        `ssl_certificate_key ${prefix}/server${i}.key;`,
        'ssl_protocols TLSv1.2 TLSv1.3;',
      );
      if (server.tls.clientCa) {
        await writeFile(path.join(prefix, `client-ca${i}.pem`), server.tls.clientCa);
        tls.push(
          `ssl_client_certificate ${prefix}/client-ca${i}.pem;`,
          `ssl_verify_client ${server.tls.verifyClient ?? 'on'};`,
        );
      }
    }
    const listen = `${port}${server.tls ? ' ssl' : ''}${server.tls?.http2 ? ' http2' : ''}`;
    blocks.push(
      `server { listen 127.0.0.1:${listen};${server.ipv6 ? ` listen [::1]:${listen};` : ''} root ${root}; ${[...tls, ...(server.directives ?? [])].join(' ')} }`,
    );
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
  log_format probefleet '$connection $connection_requests $status $bytes_sent $server_addr "$request"';
  access_log ${log} probefleet;
  client_body_temp_path ${prefix}/tmp; proxy_temp_path ${prefix}/tmp; fastcgi_temp_path ${prefix}/tmp;
  uwsgi_temp_path ${prefix}/tmp; scgi_temp_path ${prefix}/tmp;
  keepalive_requests 1000000;
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
  const failStarting = async (why: string): Promise<never> => {
    await stop();
    throw new Error(`nginx (prefix ${prefix}) ${why}: ${stderr.trim()}`);
  };
  // Ready when every port answers (bounded: 10 s).
  const until = Date.now() + 10_000;
  const urls = ports.map((port, i) => `${servers[i].tls ? 'https' : 'http'}://127.0.0.1:${port}`);
  for (const port of ports) {
    for (;;) {
      if (child.exitCode !== null) await failStarting('exited while starting');
      if (await loopbackPortAccepts(port)) break;
      if (Date.now() > until) await failStarting(`did not answer on ${port} within 10 s`);
      await sleep(50);
    }
  }
  return {
    pid: child.pid!,
    urls,
    async accessLog() {
      const text = await readFile(log, 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter((line) => line)
        .map((line) => {
          const fields = line.split(' ');
          const [connection, connectionRequests, status] = fields.map(Number);
          return {
            connection,
            connectionRequests,
            status,
            serverAddress: fields[4],
            request: /"(.*)"$/.exec(line)?.[1] ?? '',
          };
        });
    },
    stop,
  };
}
