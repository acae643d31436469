// Ways a client handles a response body, as TimedHttpClient body consumers: keep it, close it
// unread, drain it within a cap, or decode one JSON value and stop. How each ends decides
// whether the connection can carry the next request (see TimedRequestOptions.consumeBody).
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { JsonScanner } from './json-scanner.js';
import { CheckedBody } from './response-checks.js';

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

/** The default consumer: reads the whole body, keeping nothing. */
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

export async function readWholeBody(body: ResponseBody): Promise<BodyRead> {
  let bytes = 0;
  for await (const chunk of body) bytes += (chunk as Buffer).length;
  return { bytes };
}

export class UnexpectedBodyError extends Error {
  override name = 'UnexpectedBodyError';
  readonly code = 'UNEXPECTED_BODY';
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
  body: ResponseBody,
  head: ResponseHead,
  cap: { maxBytes: number; maxMs: number },
): Promise<DrainOutcome> {
  const start = performance.now();
  const declared = contentLength(head);
  if (declared !== undefined && declared > cap.maxBytes) {
    closeBody(body);
    return { bytes: 0, complete: false, capHit: 'bytes', drainMs: 0 };
  }
  let bytes = 0;
  let capHit: DrainOutcome['capHit'];
  const timer = setTimeout(() => {
    capHit = 'time';
    closeBody(body);
  }, cap.maxMs);
  try {
    for await (const chunk of body) {
      bytes += (chunk as Buffer).length;
      if (bytes > cap.maxBytes) {
        capHit = 'bytes';
        closeBody(body);
        break;
      }
    }
  } catch (err) {
    // Destroyed at the time cap: the loop ends with the abort error; anything else is real.
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
export async function decodeJsonValue(body: ResponseBody): Promise<BodyRead> {
  const scanner = new JsonScanner();
  const iterator = body[Symbol.asyncIterator]();
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
    scanner.feed(next.value as Buffer);
    if (scanner.problem) throw new UnexpectedBodyError(`JSON decoding stopped: ${scanner.problem}`);
    if (scanner.done) {
      // The decoder is done: stop reading, as a client that only wanted the value would.
      closeBody(body);
      return { bytes: scanner.consumed };
    }
    if (scanner.consumed > MAX_JSON_BYTES)
      throw new UnexpectedBodyError(`JSON value larger than ${MAX_JSON_BYTES} bytes`);
  }
  throw new UnexpectedBodyError(
    scanner.started ? 'the body ended inside a JSON value' : 'the body holds no JSON object or array',
  );
}
