// Bodies for the drain probe: what a client that leaves a body unread runs into.
//   /large?bytes=N&random=R   N bytes (default 1 MiB, at most 64 MiB) with Content-Length; with R=1
//                             incompressible ones from the seeded generator, else a repeated pattern
//   /trickle?bytes=N&chunk=C&intervalMs=T
//                             N bytes (default 64 KiB) sent C bytes (1 KiB) every T ms (20):
//                             a slow body that a capped drain must abandon, not wait for
//   /json-nested?depth=N      one JSON array nested N deep (default 2^20: 2 MiB): a decoder's worst case
//   /json-newline?delayMs=D   a small JSON object and a trailing newline, like Go's json.Encoder;
//                             with D > 0 the newline follows D ms later, so a decoder that stops
//                             at the closing brace leaves it on the wire
import type { IncomingMessage, ServerResponse } from 'node:http';
import { largeBody, randomBytes } from './content.js';
import { intParam, sendText } from './route-helpers.js';

const MAX_BYTES = 64 << 20;
const MAX_INTERVAL_MS = 10_000;

/** Reads integer query parameters; answers 400 and returns undefined when one is out of range. */
function params<K extends string>(
  req: IncomingMessage,
  res: ServerResponse,
  spec: Record<K, [fallback: number, min: number, max: number]>,
): Record<K, number> | undefined {
  const query = new URL(req.url ?? '/', 'http://lab').searchParams;
  const out = {} as Record<K, number>;
  for (const [name, [fallback, min, max]] of Object.entries(spec) as [K, [number, number, number]][]) {
    const value = intParam(query, name, fallback, min, max);
    if (typeof value === 'string') {
      sendText(res, 400, value);
      return undefined;
    }
    out[name] = value;
  }
  return out;
}

export function large(req: IncomingMessage, res: ServerResponse): void {
  const p = params(req, res, { bytes: [1 << 20, 0, MAX_BYTES], random: [0, 0, 1] });
  if (!p) return;
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': p.bytes });
  res.end(p.random ? randomBytes(p.bytes) : largeBody(p.bytes));
}

/** JSON nested `depth` deep, as one value of `bytes` bytes at most: a decoder's worst case (16 MB of brackets). */
export function jsonNested(req: IncomingMessage, res: ServerResponse): void {
  const p = params(req, res, { depth: [1 << 20, 1, MAX_BYTES / 2] });
  if (!p) return;
  const body = Buffer.alloc(2 * p.depth, '[');
  body.fill(']', p.depth);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

export function trickle(req: IncomingMessage, res: ServerResponse): void {
  const p = params(req, res, {
    bytes: [64 << 10, 1, MAX_BYTES],
    chunk: [1024, 1, 1 << 20],
    intervalMs: [20, 0, MAX_INTERVAL_MS],
  });
  if (!p) return;
  const body = largeBody(p.bytes);
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': p.bytes });
  let sent = 0;
  const timer = setInterval(() => {
    const next = body.subarray(sent, sent + p.chunk);
    sent += next.length;
    if (sent >= p.bytes) {
      clearInterval(timer);
      res.end(next);
    } else {
      res.write(next);
    }
  }, p.intervalMs);
  // A client that gives up must not leave the timer writing into a dead socket.
  res.once('close', () => clearInterval(timer));
}

const JSON_BODY = Buffer.from(JSON.stringify({ success: true, message: 'hello from the probefleet lab' }));

export function jsonNewline(req: IncomingMessage, res: ServerResponse): void {
  const p = params(req, res, { delayMs: [0, 0, MAX_INTERVAL_MS] });
  if (!p) return;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': JSON_BODY.length + 1 });
  if (p.delayMs === 0) {
    res.end(Buffer.concat([JSON_BODY, Buffer.from('\n')]));
    return;
  }
  res.write(JSON_BODY);
  const timer = setTimeout(() => res.end('\n'), p.delayMs);
  res.once('close', () => clearTimeout(timer));
}
