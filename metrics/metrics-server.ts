// /metrics over HTTP for a process's own registry (the region worker's --metrics-port), and
// /healthz: 200 `ok`, or 503 with the reason the process cannot do its work.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** Port 0 picks a free port; `url` says which. `health` says what is wrong, or undefined. */
export async function serveMetrics(
  registry: Registry,
  listen: { host: string; port: number },
  health: () => string | undefined = () => undefined,
): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
    } else if (path === '/metrics') {
      registry
        .metrics()
        .then((text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text))
        .catch((err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`));
    } else if (path === '/healthz') {
      const problem = health();
      res.writeHead(problem ? 503 : 200, { 'content-type': 'text/plain' }).end(problem ? `${problem}\n` : 'ok\n');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics or /healthz\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host}:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
