// The lab target: reference servers for every probe, on loopback. `probefleet lab` runs it
// from the command line; tests start it on port 0 and read how many connections it accepted.
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger, type Logger } from '../common/log.js';
import type { LabAddress, LabRole } from '../contracts/lab-roles.js';
import { createLabCa } from './certs.js';
import { LAB_CERT_HOSTS, type LabContext, type LabServerSpec } from './server-spec.js';
import { badStatusServer } from './servers/bad-status.js';
import { closeServer } from './servers/close.js';
import { decompressionBombServer } from './servers/decompression-bomb.js';
import { dnsServer } from './servers/dns.js';
import { echoHeadersServer } from './servers/echo-headers.js';
import { escapeCertServer } from './servers/escape-cert.js';
import { expiredCertServer } from './servers/expired-cert.js';
import { h2GoawayServer } from './servers/h2-goaway.js';
import { h2PushResetServer } from './servers/h2-push-reset.js';
import { h2RstServer } from './servers/h2-rst.js';
import { h2Server } from './servers/h2.js';
import { h2cServer } from './servers/h2c.js';
import { httpsServer } from './servers/https.js';
import { hugeBodyServer } from './servers/huge-body.js';
import { hugeHeadersServer } from './servers/huge-headers.js';
import { keepaliveServer } from './servers/keepalive.js';
import { mtlsServer } from './servers/mtls.js';
import { noAlpnServer } from './servers/no-alpn.js';
import { noResumeServer } from './servers/no-resume.js';
import { refusedServer } from './servers/refused.js';
import { resetHeadersServer } from './servers/reset-headers.js';
import { selfSignedServer } from './servers/self-signed.js';
import { silentServer } from './servers/silent.js';
import { slowHandshakeServer } from './servers/slow-handshake.js';
import { tlsResetServer } from './servers/tls-reset.js';
import { tls12Server } from './servers/tls12.js';
import { trickleServer } from './servers/trickle.js';
import { wrongHostServer } from './servers/wrong-host.js';

export const LAB_SERVERS = [
  keepaliveServer,
  closeServer,
  httpsServer,
  h2Server,
  h2cServer,
  tls12Server,
  noAlpnServer,
  expiredCertServer,
  selfSignedServer,
  wrongHostServer,
  noResumeServer,
  slowHandshakeServer,
  mtlsServer,
  dnsServer,
  // Hostile and broken targets: each failure has its own error code (docs/lab.md, "Hostile and broken targets").
  refusedServer,
  resetHeadersServer,
  silentServer,
  trickleServer,
  hugeBodyServer,
  badStatusServer,
  hugeHeadersServer,
  tlsResetServer,
  h2GoawayServer,
  h2RstServer,
  decompressionBombServer,
  h2PushResetServer,
  echoHeadersServer,
  escapeCertServer,
] as const satisfies readonly LabServerSpec[];
export type LabServerName = (typeof LAB_SERVERS)[number]['name'];

export interface LabOptions {
  host?: string;
  /** Further addresses of this host where the lab answers as well, on the same ports; its
   * certificates name them too, its URLs only `host`. Every server then listens on `::`
   * (dual-stack), so at every address of the host, both families: for a host of its own, the
   * target host of emulated regions (10.77.0.1 and fd77::1).
   * @defaultValue [] */
  alsoAt?: string[];
  /** 0 (the default) gives every server a free port; otherwise server i listens on basePort + offset. */
  basePort?: number;
  log?: Logger;
}

export interface RunningLabServer {
  name: LabServerName;
  description: string;
  url: string;
  port: number;
  /** TCP connections accepted so far. */
  connectionsAccepted(): number;
}

export interface Lab {
  servers: Record<LabServerName, RunningLabServer>;
  /** Where it listens, for plans' `lab:ROLE/path` URLs. */
  address: LabAddress;
  /** URL of a server, with an optional path. */
  url(name: LabServerName, path?: string): string;
  /** PEM of the lab CA, and a file holding it (for plans' `tls.ca`). */
  caPem: string;
  caFile: string;
  /** A client certificate the lab CA signed and its key, in files (for plans' `tls.cert` and
   * `tls.key: "${file:...}"` against the `mtls` server). */
  clientCertFile: string;
  clientKeyFile: string;
  close(): Promise<void>;
}

export class LabPortInUseError extends Error {
  override name = 'LabPortInUseError';
  constructor(
    message: string,
    readonly port: number,
  ) {
    super(message);
  }
}

function listen(server: net.Server, host: string, port: number, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new LabPortInUseError(
              `lab server "${name}" cannot listen on ${host}:${port}: the port is in use (is \`probefleet lab\` already running? choose another with --port)`,
              port,
            )
          : err,
      ),
    );
    server.listen(port, host, () => resolve((server.address() as net.AddressInfo).port));
  });
}

export async function startLab(options: LabOptions = {}): Promise<Lab> {
  const host = options.host ?? '127.0.0.1';
  const alsoAt = options.alsoAt ?? [];
  // Node turns IPV6_V6ONLY off on `::`: IPv4 clients reach it too.
  const listenHost = alsoAt.length > 0 ? '::' : host;
  const basePort = options.basePort ?? 0;
  const log = options.log ?? createLogger('lab');
  const ca = await createLabCa();
  // Valid for the listen addresses too, so clients in emulated regions can verify it (regions/).
  const certHosts = [...new Set([...LAB_CERT_HOSTS, host, ...alsoAt])];
  const ctx: LabContext = { host, alsoAt, ca, certHosts, serverCert: await ca.issue({ hosts: certHosts }), log };
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-lab-'));
  const caFile = path.join(dir, 'lab-ca.pem');
  await writeFile(caFile, ca.certPem);
  const client = await ca.issue({ hosts: ['probefleet-client'], usage: 'client' });
  const clientCertFile = path.join(dir, 'lab-client.pem');
  const clientKeyFile = path.join(dir, 'lab-client.key');
  await writeFile(clientCertFile, client.certPem);
  await writeFile(clientKeyFile, client.keyPem, { mode: 0o600 });

  const started: { server: net.Server; sockets: Set<net.Socket> }[] = [];
  const servers = {} as Record<LabServerName, RunningLabServer>;
  // A process that ends at once (a second Ctrl-C) never awaits close: its files (the client key among them) go anyway.
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', removeDir);
  const close = async () => {
    for (const { server, sockets } of started) {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    process.off('exit', removeDir);
    await rm(dir, { recursive: true, force: true });
  };

  try {
    for (const spec of LAB_SERVERS) {
      const server = await spec.create(ctx);
      const sockets = new Set<net.Socket>();
      let accepted = 0;
      server.on('connection', (socket: net.Socket) => {
        accepted++;
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      });
      started.push({ server, sockets });
      const port = await listen(server, listenHost, basePort === 0 ? 0 : basePort + spec.offset, spec.name);
      await spec.ready?.(server, ctx);
      // Connections made while getting ready (the refused server's own) are not the clients'.
      accepted = 0;
      const urlHost = host.includes(':') ? `[${host}]` : host;
      servers[spec.name] = {
        name: spec.name,
        description: spec.description,
        url: `${spec.protocol ?? spec.scheme}://${urlHost}:${port}`,
        port,
        connectionsAccepted: () => accepted,
      };
    }
  } catch (err) {
    await close();
    throw err;
  }
  log.debug({ servers: Object.values(servers).map((s) => s.url) }, 'lab started');

  return {
    servers,
    address: {
      host,
      ports: Object.fromEntries(Object.values(servers).map((s) => [s.name, s.port])) as Record<LabRole, number>,
    },
    url: (name, urlPath = '/') => servers[name].url + urlPath,
    caPem: ca.certPem,
    caFile,
    clientCertFile,
    clientKeyFile,
    close,
  };
}
