// The api.php of the HTTP performance lecture (docs/probes.md#sources), and the CORS mistakes it
// warns about.
//   /api/products          the api.php equivalent: allowlist (https://app.example), Vary: Origin,
//                          Accept-Encoding, a preflight with methods, headers and Max-Age 600,
//                          gzip level 6 when asked, and a log line for every request it ran
//   /api/requests          that log as JSON, newest last: what the server ran, whatever CORS said
//   /cors/misconfigured?fault=wildcard-credentials | reflect-origin | no-vary | narrow-preflight
//                          one CORS mistake each, with a tiny JSON body
import type { IncomingMessage, ServerResponse } from 'node:http';
import { compress } from '../common/content-coding.js';
import { REQUEST_ID_HEADER } from '../contracts/probes/cors.js';
import { productsJson, TINY_JSON } from './content.js';
import { sendText } from './route-helpers.js';

/** The origin api.php allows. */
export const LAB_ALLOWED_ORIGIN = 'https://app.example';

export interface LoggedRequest {
  at: string;
  method: string;
  path: string;
  origin: string | null;
  requestId: string | null;
}

/** Bounded: the newest entries win. Shared by every lab server in the process. */
const REQUEST_LOG_LIMIT = 500;
const requestLog: LoggedRequest[] = [];

function logRequest(req: IncomingMessage): void {
  const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : null);
  requestLog.push({
    at: new Date().toISOString(),
    method: req.method ?? 'GET',
    path: (req.url ?? '/').split('?')[0],
    origin: header('origin'),
    requestId: header(REQUEST_ID_HEADER),
  });
  if (requestLog.length > REQUEST_LOG_LIMIT) requestLog.splice(0, requestLog.length - REQUEST_LOG_LIMIT);
}

let products: Buffer | undefined;

export function apiProducts(req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  // CORS: only for allowed origins, and tell caches the answer depends on Origin.
  res.setHeader('vary', 'Origin, Accept-Encoding');
  if (origin === LAB_ALLOWED_ORIGIN) res.setHeader('access-control-allow-origin', origin);
  if (req.method === 'OPTIONS') {
    res.setHeader('access-control-allow-methods', 'GET, POST, PUT');
    res.setHeader('access-control-allow-headers', 'Content-Type, Authorization');
    res.setHeader('access-control-max-age', '600');
    res.writeHead(204);
    res.end();
    return;
  }
  logRequest(req); // the server DID run
  products ??= productsJson();
  let body = products;
  res.setHeader('content-type', 'application/json');
  if ((req.headers['accept-encoding'] ?? '').includes('gzip')) {
    body = compress('gzip', body, 6);
    res.setHeader('content-encoding', 'gzip');
  }
  res.setHeader('content-length', body.length);
  res.writeHead(200);
  res.end(body);
}

export function apiRequests(_req: IncomingMessage, res: ServerResponse): void {
  const body = Buffer.from(`${JSON.stringify({ requests: requestLog })}\n`);
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': body.length,
    'cache-control': 'no-store',
  });
  res.end(body);
}

export const CORS_FAULTS = ['wildcard-credentials', 'reflect-origin', 'no-vary', 'narrow-preflight'] as const;
type CorsFault = (typeof CORS_FAULTS)[number];

/** Response headers per fault: [for a preflight, for the actual request]. */
function faultyHeaders(
  fault: CorsFault,
  origin: string | undefined,
): { preflight: Record<string, string>; actual: Record<string, string> } {
  // Done right apart from the fault: the allowed origin echoed, with credentials.
  const allowed: Record<string, string> =
    origin === LAB_ALLOWED_ORIGIN
      ? { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true' }
      : {};
  const preflight = {
    'access-control-allow-methods': 'GET, POST, PUT',
    'access-control-allow-headers': 'Content-Type, Authorization',
    'access-control-max-age': '600',
  };
  switch (fault) {
    case 'wildcard-credentials': {
      const cors = { 'access-control-allow-origin': '*', 'access-control-allow-credentials': 'true' };
      return { preflight: { ...cors, ...preflight }, actual: cors };
    }
    case 'reflect-origin': {
      const cors = {
        ...(origin ? { 'access-control-allow-origin': origin } : {}),
        'access-control-allow-credentials': 'true',
        vary: 'Origin',
      };
      return { preflight: { ...cors, ...preflight }, actual: cors };
    }
    case 'no-vary':
      return { preflight: { ...allowed, ...preflight }, actual: allowed };
    case 'narrow-preflight':
      return {
        preflight: {
          ...allowed,
          vary: 'Origin',
          'access-control-allow-methods': 'GET, POST',
          'access-control-allow-headers': 'Authorization',
          'access-control-max-age': '600',
        },
        actual: { ...allowed, vary: 'Origin' },
      };
  }
}

export function corsMisconfigured(req: IncomingMessage, res: ServerResponse): void {
  const fault = new URL(req.url ?? '/', 'http://lab').searchParams.get('fault');
  if (!CORS_FAULTS.includes(fault as CorsFault))
    return sendText(res, 400, `fault must be one of ${CORS_FAULTS.join(', ')}`);
  const headers = faultyHeaders(fault as CorsFault, req.headers.origin);
  if (req.method === 'OPTIONS') {
    res.writeHead(204, headers.preflight);
    res.end();
    return;
  }
  logRequest(req);
  res.writeHead(200, { ...headers.actual, 'content-type': 'application/json', 'content-length': TINY_JSON.length });
  res.end(TINY_JSON);
}
