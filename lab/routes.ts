// Paths every lab HTTP server answers. A server's own behaviour (closing, TLS) is in its
// file under lab/servers/; what a path returns is here.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ASSET_PATHS, serveAsset } from './compression-routes.js';
import { apiProducts, apiRequests, corsMisconfigured } from './cors-routes.js';
import { jsonNested, jsonNewline, large, trickle } from './drain-routes.js';

const HELLO = Buffer.from('hello from the probefleet lab\n');
/** The preload the /early-hints route announces, in its 103 and again in its 200. */
export const EARLY_HINTS_LINK = '</style.css>; rel=preload; as=style';

type Route = (req: IncomingMessage, res: ServerResponse) => void;

const routes: Record<string, Route> = {
  '/': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': HELLO.length });
    res.end(HELLO);
  },

  // Headers and body in two writes with Nagle on, like Python's http.server: on a reused
  // connection the body waits for the client's delayed ACK of the headers (~40 ms on Linux).
  '/nagle': (req, res) => {
    req.socket.setNoDelay(false);
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': HELLO.length });
    res.flushHeaders();
    res.end(HELLO);
  },

  // Compression: lab/compression-routes.ts.
  ...Object.fromEntries(ASSET_PATHS.map((path) => [path, serveAsset])),
  // CORS, like the HTTP performance lecture's api.php (docs/probes.md#sources): lab/cors-routes.ts.
  '/api/products': apiProducts,
  '/api/requests': apiRequests,
  '/cors/misconfigured': corsMisconfigured,
  // Drain: lab/drain-routes.ts.
  '/large': large,
  '/trickle': trickle,
  '/json-newline': jsonNewline,
  '/json-nested': jsonNested,
  // 103 Early Hints before the 200, as CDNs send them: the final head is not the first one.
  '/early-hints': (_req, res) => {
    res.writeEarlyHints({ link: EARLY_HINTS_LINK });
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': HELLO.length, link: EARLY_HINTS_LINK });
    res.end(HELLO);
  },
  // Any Alt-Svc value a server might send, from ?value=: what the probes and the report make of
  // malformed ones. A value Node will not send as a header (CR, LF) is a 400.
  '/alt-svc': (req, res) => {
    const value = new URL(req.url ?? '/', 'http://lab').searchParams.get('value') ?? '';
    try {
      res.setHeader('alt-svc', value);
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain', 'content-length': 0 }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': HELLO.length });
    res.end(HELLO);
  },
  // Answers after ?ms= milliseconds (at most 10 s): a slow backend, for latency under load.
  '/delay': (req, res) => {
    const ms = Math.min(Number(new URL(req.url ?? '/', 'http://lab').searchParams.get('ms')) || 0, 10_000);
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': HELLO.length });
      res.end(HELLO);
    }, ms);
  },
};

export function handleLabRequest(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0];
  const route = routes[path];
  // A socket left with Nagle on by /nagle gets it back off for every other path.
  if (path !== '/nagle') req.socket.setNoDelay(true);
  if (!route) {
    res.writeHead(404, { 'content-type': 'text/plain', 'content-length': 10 });
    res.end('not found\n');
    return;
  }
  route(req, res);
}

export const LAB_PATHS = Object.keys(routes);
