// Services of this machine (Redis, a Pushgateway) reached from inside the regions at the same
// address, 127.0.0.1:PORT, and without the region's delay. A region's namespace has no link to
// the root namespace at all; a Unix socket (a file, so visible from every namespace) joins them:
//
//   region ns: relay on 127.0.0.1:PORT ──unix socket──▶ root ns: relay ──▶ 127.0.0.1:PORT
//
// Both relays are small processes (relay-entry.js) that exit when the harness goes, so a busy
// harness process never stalls a worker's Redis traffic. Both hops are local sockets (tens of
// microseconds), and nothing a region sends can reach any other address of this machine.
import net from 'node:net';
import path from 'node:path';

/** A TCP port on 127.0.0.1 of the relay's namespace, or a Unix socket. */
export type RelayEnd = { port: number } | { path: string };

/** The Unix socket in a harness's run directory that stands for TCP port `port` of this machine. */
export function relaySocketPath(runDir: string, port: number): string {
  return path.join(runDir, `tcp-${port}.sock`);
}

/** `PORT` or a socket path, as relay-entry.js takes them on its command line. */
export function formatRelayEnd(end: RelayEnd): string {
  return 'port' in end ? String(end.port) : end.path;
}

export function parseRelayEnd(text: string): RelayEnd {
  return /^\d+$/.test(text) ? { port: Number(text) } : { path: text };
}

/** Pipes two sockets together; either side closing or failing closes both. */
function splice(a: net.Socket, b: net.Socket): void {
  a.pipe(b);
  b.pipe(a);
  const close = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', close).on('close', close);
  b.on('error', close).on('close', close);
}

/** Accepts on `listen` and connects each client to `connect`. */
export async function startRelay(listen: RelayEnd, connect: RelayEnd): Promise<net.Server> {
  const server = net.createServer({ noDelay: true }, (incoming) => {
    incoming.pause();
    const outgoing =
      'port' in connect
        ? net.connect({ host: '127.0.0.1', port: connect.port, noDelay: true })
        : net.connect(connect.path);
    outgoing.once('connect', () => incoming.resume());
    splice(incoming, outgoing);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if ('port' in listen) server.listen(listen.port, '127.0.0.1', () => resolve());
    else server.listen(listen.path, () => resolve());
  });
  return server;
}
