// A hand-written HTTP/1.1 request head and a reader for the response head, byte for byte: the
// http2 probe needs exact HTTP/1.1 header sizes, and an `Upgrade: h2c` request that no HTTP
// client library sends (undici refuses the `upgrade` header; node:http hides the 101).
import type { Duplex } from 'node:stream';
import { headerValueCharsProblem } from '../../contracts/secrets.js';
import { WireError } from './wire.js';

/** Response heads longer than this are not a head we want to read. */
const MAX_HEAD_BYTES = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');

export interface Http1ResponseHead {
  /** e.g. "HTTP/1.1 200 OK" */
  statusLine: string;
  httpVersion: string;
  status: number;
  /** Lower-case names; repeated fields joined with ", ". */
  headers: Record<string, string>;
  /** The head on the wire, status line to the blank line included, with the interim heads before it. */
  headBytes: number;
  /** What arrived after the head in the same reads (body, or the first HTTP/2 frames after a 101). */
  rest: Buffer;
}

/**
 * `GET /path HTTP/1.1` with Host first, then `headers` in order; ends with the blank line.
 * Written as bytes, one per character, with no HTTP library checking them: a value that is not
 * sendable as it is (a CR or LF would add a header) is refused here too, not only by the plan
 * and the worker's secrets, because this is where it would go out.
 */
export function http1RequestHead(method: string, path: string, host: string, headers: Record<string, string>): Buffer {
  for (const [name, value] of Object.entries(headers)) {
    const problem = headerValueCharsProblem(value);
    if (problem) throw new Error(`header ${name} ${problem}`);
  }
  const lines = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${host}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

/**
 * Reads from `socket` up to the end of one final response head: interim 1xx heads (100
 * Continue, 103 Early Hints) are counted and read past, as curl counts them; 101 Switching
 * Protocols is final for this purpose, as what follows it is no longer HTTP/1.1. Rejects with EWIRE_CLOSED when the
 * peer closes first, EWIRE_HEAD_TOO_LARGE past MAX_HEAD_BYTES and EWIRE_MALFORMED when what
 * arrives is not an HTTP/1.x head; the caller bounds it in time (wire.ts `bounded`).
 */
export function readHttp1ResponseHead(socket: Duplex): Promise<Http1ResponseHead> {
  return new Promise((resolve, reject) => {
    let received: Buffer = Buffer.alloc(0);
    let interimBytes = 0;
    const done = (err: Error | null, head?: Http1ResponseHead) => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('error', onError);
      socket.off('close', onEnd);
      if (err) reject(err);
      else resolve(head!);
    };
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      for (;;) {
        const end = received.indexOf(HEAD_END);
        if (end === -1) {
          if (interimBytes + received.length > MAX_HEAD_BYTES)
            done(new WireError(`response head longer than ${MAX_HEAD_BYTES} bytes`, 'EWIRE_HEAD_TOO_LARGE'));
          else if (!/^HTTP\/\d/.test(received.subarray(0, 8).toString('latin1')) && received.length >= 8) {
            done(new WireError(`not an HTTP/1.x response: ${describeBytes(received)}`, 'EWIRE_MALFORMED'));
          }
          return;
        }
        let head: Http1ResponseHead;
        try {
          head = parseHead(
            received.subarray(0, end).toString('latin1'),
            end + HEAD_END.length,
            received.subarray(end + HEAD_END.length),
          );
        } catch (err) {
          done(err as Error);
          return;
        }
        if (head.status >= 100 && head.status < 200 && head.status !== 101) {
          interimBytes += head.headBytes;
          received = head.rest;
          continue;
        }
        socket.pause();
        done(null, { ...head, headBytes: interimBytes + head.headBytes });
        return;
      }
    };
    const onEnd = () =>
      done(
        new WireError(
          received.length > 0
            ? `connection closed after ${describeBytes(received)}`
            : 'connection closed without an answer',
          'EWIRE_CLOSED',
        ),
      );
    const onError = (err: Error) => done(err);
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    socket.once('error', onError);
    socket.resume();
  });
}

function parseHead(text: string, headBytes: number, rest: Buffer): Http1ResponseHead {
  const [statusLine, ...fieldLines] = text.split('\r\n');
  const match = /^HTTP\/(\d\.\d) (\d{3})(?: .*)?$/.exec(statusLine);
  if (!match)
    throw new WireError(`not an HTTP/1.x status line: ${JSON.stringify(statusLine.slice(0, 80))}`, 'EWIRE_MALFORMED');
  const headers: Record<string, string> = {};
  for (const line of fieldLines) {
    const colon = line.indexOf(':');
    if (colon <= 0)
      throw new WireError(`malformed header line: ${JSON.stringify(line.slice(0, 80))}`, 'EWIRE_MALFORMED');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return { statusLine, httpVersion: match[1], status: Number(match[2]), headers, headBytes, rest };
}

/** The first bytes of an answer, for messages: text when it is text, hex otherwise. */
export function describeBytes(bytes: Buffer): string {
  const head = bytes.subarray(0, 40);
  const printable = /^[\x20-\x7e\r\n\t]*$/.test(head.toString('latin1'));
  const shown = printable ? JSON.stringify(head.toString('latin1').split('\r\n')[0]) : `0x${head.toString('hex')}`;
  return `${bytes.length} bytes starting ${shown}`;
}
