// node:http2 client sessions over sockets we opened (and timed) ourselves, and GET requests on
// them that always settle: every request is bounded in time, and a session that dies takes its
// streams with it, so a server that never answers HTTP/2 yields an error, never a hang.
import http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import { bounded, overResponseCap, responseTooLarge, WireError } from './wire.js';

export interface H2Response {
  streamId: number;
  status: number;
  bodyBytes: number;
  /** The response's Alt-Svc header, if any. */
  altSvc?: string | string[];
}

/**
 * A client session on `socket` (already connected, TLS done if https). `origin` gives
 * `:scheme` and `:authority`; no connection is made from it. Session errors reach the
 * requests through their streams, so the session's own `error` event is only kept from
 * crashing the process. Push is off, as in browsers and curl: a server that pushes anyway
 * commits a connection error (PROTOCOL_ERROR, RFC 9113 §8.4), which is what those clients see
 * too; with push on, a pushed stream the server then resets would be an uncaught 'error'.
 */
export function h2SessionOver(origin: string, socket: Duplex): http2.ClientHttp2Session {
  const session = http2.connect(origin, { createConnection: () => socket, settings: { enablePush: false } });
  session.on('error', () => {});
  return session;
}

/** One request on `session` (the target's method and body; GET without one), body read to the
 * end; rejects on stream or session failure, or after `timeoutMs`. */
export function h2Request(
  session: http2.ClientHttp2Session,
  request: { method: string; path: string; headers: Record<string, string>; body?: string },
  timeoutMs: number,
  signal: AbortSignal,
): Promise<H2Response> {
  const { method, path, headers, body } = request;
  let stream: http2.ClientHttp2Stream;
  try {
    stream = session.request({ ...headers, ':method': method, ':path': path }, { endStream: body === undefined });
    if (body !== undefined) stream.end(body);
  } catch (err) {
    return Promise.reject(err as Error);
  }
  const work = new Promise<H2Response>((resolve, reject) => {
    let status: number | undefined;
    let altSvc: string | string[] | undefined;
    let bodyBytes = 0;
    let settled = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve({ streamId: stream.id ?? 0, status: status!, bodyBytes, ...(altSvc ? { altSvc } : {}) });
    };
    stream.on('response', (responseHeaders) => {
      status = Number(responseHeaders[':status']);
      altSvc = responseHeaders['alt-svc'];
    });
    stream.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length;
      if (overResponseCap(bodyBytes)) {
        settle(responseTooLarge());
        stream.destroy();
      }
    });
    stream.on('end', () =>
      settle(
        status === undefined ? new WireError('HTTP/2 stream ended without response headers', 'EWIRE_MALFORMED') : null,
      ),
    );
    stream.on('error', (err: Error) => settle(err));
    // After a complete response `end` has settled it; a close before that lost something.
    stream.on('close', () =>
      settle(
        new WireError(
          `HTTP/2 stream closed before ${status === undefined ? 'a response' : 'the end of the body'} (RST_STREAM code ${stream.rstCode ?? 'none'})`,
          'EWIRE_CLOSED',
        ),
      ),
    );
  });
  return bounded(work, timeoutMs, signal, `HTTP/2 ${method} ${path}`, () => stream.destroy());
}
