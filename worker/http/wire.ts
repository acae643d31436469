// Failures of the hand-driven exchanges (raw HTTP/1.1 heads, node:http2 sessions) and of the
// time bounds added around undici's, with codes that worker/classify-error.ts maps, and the
// time bound every such exchange runs under.
import { JOB_LIMITS } from '../../contracts/limits.js';

export type WireErrorCode =
  /** The peer closed the connection before answering. */
  | 'EWIRE_CLOSED'
  /** No answer within the attempt's time bound. */
  | 'EWIRE_TIMEOUT'
  /** An answer began, but its body did not end within the attempt's time bound. */
  | 'EWIRE_BODY_TIMEOUT'
  /** The answer was not what the protocol allows. */
  | 'EWIRE_MALFORMED'
  /** The response head is longer than we read. */
  | 'EWIRE_HEAD_TOO_LARGE'
  /** The response is longer than a job may read (JOB_LIMITS.responseBytes). */
  | 'EWIRE_TOO_LARGE';

export class WireError extends Error {
  override name = 'WireError';
  constructor(
    message: string,
    readonly code: WireErrorCode,
  ) {
    super(message);
  }
}

/** Whether a response of `bytes` so far is past the per-job cap: then it is cut with `responseTooLarge`. */
export function overResponseCap(bytes: number): boolean {
  return bytes > JOB_LIMITS.responseBytes;
}

export function responseTooLarge(): WireError {
  return new WireError(
    `response body longer than the per-job cap of ${JOB_LIMITS.responseBytes} bytes: reading stopped there`,
    'EWIRE_TOO_LARGE',
  );
}

/**
 * Settles with `work`, or rejects when `timeoutMs` passes (EWIRE_TIMEOUT) or `signal` aborts
 * (the job's own bound). `onGiveUp` runs when it rejects for either, so sockets are not left open.
 */
export function bounded<T>(
  work: Promise<T>,
  timeoutMs: number,
  signal: AbortSignal,
  what: string,
  onGiveUp: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const giveUp = (err: Error) => {
      cleanup();
      onGiveUp();
      reject(err);
    };
    const onAbort = () =>
      giveUp(signal.reason instanceof Error ? signal.reason : new DOMException('aborted', 'AbortError'));
    const timer = setTimeout(
      () => giveUp(new WireError(`${what}: no answer within ${timeoutMs} ms`, 'EWIRE_TIMEOUT')),
      timeoutMs,
    );
    const cleanup = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (err: unknown) => {
        cleanup();
        reject(err);
      },
    );
  });
}

/** An exchange's time bound passed: before the response head (EWIRE_TIMEOUT) or after (EWIRE_BODY_TIMEOUT). */
export function exchangeTimeout(timeoutMs: number, answered: boolean): WireError {
  return answered
    ? new WireError(`the body did not end within ${timeoutMs} ms`, 'EWIRE_BODY_TIMEOUT')
    : new WireError(`no response within ${timeoutMs} ms`, 'EWIRE_TIMEOUT');
}

/**
 * An abort signal for one whole exchange: aborted by `signal` (the job's bound), or when
 * `timeoutMs` passes before it is released (EWIRE_TIMEOUT before the response head,
 * EWIRE_BODY_TIMEOUT after). undici's own timeouts bound each wait (the head, the gap between
 * two body chunks), which a body trickling in just fast enough never trips. `signal` is relayed by
 * hand: AbortSignal.any per request would pile up listeners on the job's signal.
 */
export function exchangeBound(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  answered: () => boolean,
): { signal: AbortSignal; release(): void } {
  const overall = new AbortController();
  const relay = () => overall.abort(signal?.reason);
  if (signal?.aborted) relay();
  else signal?.addEventListener('abort', relay, { once: true });
  const timer = setTimeout(() => overall.abort(exchangeTimeout(timeoutMs, answered())), timeoutMs);
  return {
    signal: overall.signal,
    release() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', relay);
    },
  };
}
