// Ways a client handles a response body: keep it, close it unread, drain it within a cap, or
// decode one JSON value and stop. How each ends decides whether the connection can carry the next
// request (see TimedRequestOptions.consumeBody). The drain probe reads bodies through BodyChunks,
// from undici or from Http1Body, the small reader over a raw connection that hands out only what
// its reader asked for, so a client policy can tell exactly whether the body was read to its end.
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { JsonScanner } from './json-scanner.js';
import { CheckedBody } from './response-checks.js';
import { overResponseCap, responseTooLarge, WireError } from './wire.js';

export type ResponseBody = Dispatcher.ResponseData['body'];

/** Status and headers of a response, as the body consumer and the caller see them. */
export interface ResponseHead {
  statusCode: number;
  /** Lower-case names. */
  headers: Dispatcher.ResponseData['headers'];
}

/** What a body consumer reports; `bytes` are the body bytes the client read. */
export interface BodyRead {
  bytes: number;
  /** The body's first CHECKED_BODY_BYTES, where the consumer kept them for the target's checks. */
  checked?: Buffer;
}

export type BodyConsumer<T extends BodyRead> = (body: ResponseBody, head: ResponseHead) => Promise<T>;

/** Reads the body to its end, keeping its first CHECKED_BODY_BYTES for a response check. */
export async function readWholeBodyForCheck(body: ResponseBody): Promise<BodyRead & { checked: Buffer }> {
  const kept = new CheckedBody();
  let bytes = 0;
  for await (const chunk of body) {
    bytes += (chunk as Buffer).length;
    kept.add(chunk as Buffer);
  }
  return { bytes, checked: kept.bytes };
}

/** The default consumer: reads the whole body, keeping nothing. */
export async function readWholeBody(body: AsyncIterable<Buffer>): Promise<BodyRead> {
  let bytes = 0;
  for await (const chunk of body) bytes += (chunk as Buffer).length;
  return { bytes };
}

export class UnexpectedBodyError extends Error {
  override name = 'UnexpectedBodyError';
  readonly code = 'UNEXPECTED_BODY';
}

/** A response body as a reader takes it: chunks as they arrive, and a way to stop before its end. */
export interface BodyChunks extends AsyncIterable<Buffer> {
  /** Stops reading: the rest stays unread (what that costs the connection is the client's policy). */
  close(): void;
}

/** undici's body as BodyChunks: closing it destroys it. */
export function undiciBodyChunks(body: ResponseBody): BodyChunks {
  return {
    [Symbol.asyncIterator]: () => body[Symbol.asyncIterator]() as AsyncIterator<Buffer>,
    close: () => closeBody(body),
  };
}

/** Destroys a body the client will not read; undici then drops the connection unless the response was already complete. */
export function closeBody(body: ResponseBody): void {
  // Destroying emits an abort error on the body; nobody else listens for it.
  body.on('error', () => {});
  body.destroy();
}

export function contentLength(head: ResponseHead): number | undefined {
  const value = Number(head.headers['content-length']);
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** The whole body in memory, up to `maxBytes`. */
export function collectBody(maxBytes: number) {
  return async (body: ResponseBody): Promise<BodyRead & { data: Buffer }> => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of body) {
      bytes += (chunk as Buffer).length;
      if (bytes > maxBytes) {
        closeBody(body);
        throw new UnexpectedBodyError(`body larger than ${maxBytes} bytes, the most this probe keeps`);
      }
      chunks.push(chunk as Buffer);
    }
    return { bytes, data: Buffer.concat(chunks, bytes) };
  };
}

export interface DrainOutcome extends BodyRead {
  /** The body was read to its end. */
  complete: boolean;
  capHit?: 'bytes' | 'time';
  drainMs: number;
}

/**
 * Reads and discards the body, at most `maxBytes` and for at most `maxMs`, then closes it (Go
 * 1.27's drain of an unread body). A declared length over the byte cap is not even started.
 */
export async function drainBody(
  body: BodyChunks,
  head: ResponseHead,
  cap: { maxBytes: number; maxMs: number },
  /** Body bytes its reader took before: the cap is on what is left. */
  alreadyRead = 0,
): Promise<DrainOutcome> {
  const start = performance.now();
  const declared = contentLength(head);
  if (declared !== undefined && declared - alreadyRead > cap.maxBytes) {
    body.close();
    return { bytes: 0, complete: false, capHit: 'bytes', drainMs: 0 };
  }
  let bytes = 0;
  let capHit: DrainOutcome['capHit'];
  const timer = setTimeout(() => {
    capHit = 'time';
    body.close();
  }, cap.maxMs);
  try {
    for await (const chunk of body) {
      bytes += (chunk as Buffer).length;
      if (bytes > cap.maxBytes) {
        capHit = 'bytes';
        body.close();
        break;
      }
    }
  } catch (err) {
    // An undici body destroyed at the time cap ends the loop with an abort error; anything else is real.
    if (capHit !== 'time') throw err;
  } finally {
    clearTimeout(timer);
  }
  return { bytes, complete: capHit === undefined, ...(capHit ? { capHit } : {}), drainMs: performance.now() - start };
}

/** Largest JSON value the json mode decodes. */
const MAX_JSON_BYTES = 16 << 20;

/**
 * Reads until one JSON object or array is complete, checking it is JSON as it arrives, and
 * closes the body without reading further, like Go's json.Decoder: whatever follows the closing
 * bracket (a trailing newline) is left unread. `bytes` counts the body up to and including the
 * closing bracket. Nothing is parsed into objects, so a hostile body costs one pass over it.
 */
export async function decodeJsonValue(body: BodyChunks): Promise<BodyRead> {
  const scanner = new JsonScanner();
  const iterator = body[Symbol.asyncIterator]();
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
    scanner.feed(next.value as Buffer);
    if (scanner.problem) throw new UnexpectedBodyError(`JSON decoding stopped: ${scanner.problem}`);
    if (scanner.done) {
      // The decoder is done: stop reading, as a client that only wanted the value would.
      body.close();
      return { bytes: scanner.consumed };
    }
    if (scanner.consumed > MAX_JSON_BYTES)
      throw new UnexpectedBodyError(`JSON value larger than ${MAX_JSON_BYTES} bytes`);
  }
  throw new UnexpectedBodyError(
    scanner.started ? 'the body ended inside a JSON value' : 'the body holds no JSON object or array',
  );
}

/** How an HTTP/1.1 response body is delimited (RFC 9112 §6.3). */
export type Http1Framing =
  | { kind: 'none' }
  | { kind: 'length'; length: number }
  | { kind: 'chunked' }
  /** Until the server closes: the connection cannot carry another response. */
  | { kind: 'close' };

/** The framing of a response to `method`; a Content-Length that is not one number is refused. */
export function http1Framing(method: string, status: number, headers: Record<string, string>): Http1Framing {
  if (method === 'HEAD' || status < 200 || status === 204 || status === 304) return { kind: 'none' };
  const coding = headers['transfer-encoding'];
  if (coding !== undefined) {
    return coding.split(',').at(-1)?.trim().toLowerCase() === 'chunked' ? { kind: 'chunked' } : { kind: 'close' };
  }
  const length = headers['content-length'];
  if (length === undefined) return { kind: 'close' };
  if (!/^\d{1,15}$/.test(length))
    throw new WireError(`Content-Length ${JSON.stringify(length.slice(0, 40))} is not one length`, 'EWIRE_MALFORMED');
  return Number(length) === 0 ? { kind: 'none' } : { kind: 'length', length: Number(length) };
}

/** A chunk-size line or the trailer section longer than this is not one we read. */
const MAX_CHUNK_LINE_BYTES = 4096;
const MAX_TRAILER_BYTES = 64 * 1024;
const CRLF = Buffer.from('\r\n');

/**
 * An HTTP/1.1 response body read from a raw connection, only as far as its reader asks: each
 * step hands out what has arrived and been unframed, and takes more from the socket only when
 * nothing is left. `complete` says whether a read handed out the body's end (with its last bytes,
 * as Go's body returns io.EOF with the last data, or alone); a body whose end arrived but was
 * never read is not complete, as Go 1.19 holds (checked: docs/probes.md). What happens to a body
 * closed before it is complete is the client's policy. Bounded in size (JOB_LIMITS.responseBytes); the
 * caller bounds it in time by destroying the socket.
 */
export class Http1Body implements BodyChunks {
  /** Body bytes handed to the reader. */
  delivered = 0;
  /** Bytes that arrived after the body's end (a server that sent more than one response's worth). */
  excess = 0;
  /** The framing said where the body ends and that end has arrived. */
  private ended: boolean;
  /** A read handed out the body's end: its last bytes with the end among them, or nothing but the end. */
  private endRead = false;
  /** Whether the program closed the body (each remainder() has a flag of its own). */
  private readonly reader = { closed: false };
  /** Raw bytes received, not yet unframed. */
  private raw: Buffer;
  /** Body bytes unframed, not yet handed out. */
  private ready: Buffer[] = [];
  private left: number;
  private chunkState: 'size' | 'data' | 'data-end' | 'trailers' = 'size';
  private trailerBytes = 0;
  /** Ends a read waiting for the socket when the reader closes the body. */
  private wake: (() => void) | undefined;

  constructor(
    private readonly socket: Duplex,
    readonly framing: Http1Framing,
    /** What arrived with the head, after it. */
    rest: Buffer,
  ) {
    this.ended = framing.kind === 'none';
    this.left = framing.kind === 'length' ? framing.length : 0;
    this.raw = rest;
    this.unframe();
  }

  /** The reader got the whole body, its end included (a body of no bytes: once it asked). */
  get complete(): boolean {
    return this.endRead || this.framing.kind === 'none';
  }

  /** The program's close: the body as the program reads it ends here. */
  close(): void {
    this.reader.closed = true;
    this.wake?.();
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return this.chunks(this.reader);
  }

  /** The rest of the body, for the client's own reading after the program closed it (a drain). */
  remainder(): BodyChunks {
    const reader = { closed: false };
    return {
      [Symbol.asyncIterator]: () => this.chunks(reader),
      close: () => {
        reader.closed = true;
        this.wake?.();
      },
    };
  }

  private async *chunks(reader: { closed: boolean }): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = await this.next(reader);
      if (chunk === null) return;
      yield chunk;
    }
  }

  /** What has arrived of the body since the last call, or null at its end or once `reader` closed. */
  private async next(reader: { closed: boolean }): Promise<Buffer | null> {
    while (!reader.closed && this.ready.length === 0 && !this.ended) {
      const received = await this.receive();
      if (received === null) break;
      this.raw = this.raw.length === 0 ? received : Buffer.concat([this.raw, received]);
      this.unframe();
    }
    if (reader.closed) return null;
    this.endRead = this.ended;
    if (this.ready.length === 0) return null;
    const chunk = this.ready.length === 1 ? this.ready[0] : Buffer.concat(this.ready);
    this.ready = [];
    this.delivered += chunk.length;
    if (overResponseCap(this.delivered)) throw responseTooLarge();
    return chunk;
  }

  /** The next bytes from the socket; null when the reader closed the body meanwhile. */
  private receive(): Promise<Buffer | null> {
    return new Promise((resolve, reject) => {
      const done = (err: Error | null, chunk: Buffer | null) => {
        this.socket.off('data', onData);
        this.socket.off('end', onEnd);
        this.socket.off('close', onEnd);
        this.socket.off('error', onError);
        this.wake = undefined;
        this.socket.pause();
        if (err) reject(err);
        else resolve(chunk);
      };
      const onData = (chunk: Buffer) => done(null, chunk);
      const onEnd = () => {
        if (this.framing.kind === 'close') {
          this.ended = true;
          done(null, null);
        } else done(new WireError('the connection closed inside the body', 'EWIRE_CLOSED'), null);
      };
      const onError = (err: Error) => done(err, null);
      this.wake = () => done(null, null);
      this.socket.on('data', onData);
      this.socket.once('end', onEnd);
      this.socket.once('close', onEnd);
      this.socket.once('error', onError);
      this.socket.resume();
    });
  }

  /** Moves body bytes from `raw` to `ready` as far as the framing allows. */
  private unframe(): void {
    if (this.framing.kind === 'none') {
      this.excess += this.raw.length;
      this.raw = Buffer.alloc(0);
      return;
    }
    if (this.framing.kind === 'close') {
      if (this.raw.length > 0) this.ready.push(this.raw);
      this.raw = Buffer.alloc(0);
      return;
    }
    if (this.framing.kind === 'length') {
      const take = Math.min(this.left, this.raw.length);
      if (take > 0) this.ready.push(this.raw.subarray(0, take));
      this.left -= take;
      this.excess += this.raw.length - take;
      this.raw = Buffer.alloc(0);
      this.ended = this.left === 0;
      return;
    }
    while (!this.ended && this.raw.length > 0) {
      if (this.chunkState === 'data') {
        const take = Math.min(this.left, this.raw.length);
        this.ready.push(this.raw.subarray(0, take));
        this.raw = this.raw.subarray(take);
        this.left -= take;
        if (this.left === 0) this.chunkState = 'data-end';
        continue;
      }
      const eol = this.raw.indexOf(CRLF);
      if (eol === -1) {
        const limit = this.chunkState === 'trailers' ? MAX_TRAILER_BYTES - this.trailerBytes : MAX_CHUNK_LINE_BYTES;
        if (this.raw.length > limit) throw new WireError('a chunk line or trailer too long', 'EWIRE_MALFORMED');
        return;
      }
      const line = this.raw.subarray(0, eol).toString('latin1');
      this.raw = this.raw.subarray(eol + 2);
      if (this.chunkState === 'data-end') {
        if (line !== '') throw new WireError('chunk data longer than its size', 'EWIRE_MALFORMED');
        this.chunkState = 'size';
      } else if (this.chunkState === 'size') {
        const size = /^([0-9a-fA-F]{1,13})[ \t]*(;.*)?$/.exec(line);
        if (!size) throw new WireError(`not a chunk size: ${JSON.stringify(line.slice(0, 40))}`, 'EWIRE_MALFORMED');
        this.left = Number.parseInt(size[1], 16);
        this.chunkState = this.left === 0 ? 'trailers' : 'data';
      } else {
        this.trailerBytes += eol + 2;
        if (this.trailerBytes > MAX_TRAILER_BYTES) throw new WireError('trailers too long', 'EWIRE_MALFORMED');
        if (line === '') this.ended = true;
      }
    }
    if (this.ended) {
      this.excess += this.raw.length;
      this.raw = Buffer.alloc(0);
    }
  }
}
