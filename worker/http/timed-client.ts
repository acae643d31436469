// One undici Client (one connection at a time, so reuse is measured, not guessed) whose
// requests come back as RequestSamples with per-phase times. `request` is the per-request hot
// path of the sequential probes: a bare undici dispatch with a handler that counts the body's
// bytes, one time bound per client and the job's signal watched once per client, so the time a
// sample reports is the server's and the wire's, not ours. `exchange` gives the response head
// and body to a consumer (undici's `request` and its body stream) for the probes that read them.
import { performance } from 'node:perf_hooks';
import { Client, errors, type Dispatcher } from 'undici';
import type { PhaseTimes, ProbeError, RequestSample } from '../../contracts/common.js';
import type { JobTarget } from '../../contracts/job.js';
import { JOB_LIMITS } from '../../contracts/limits.js';
import { classifyError } from '../classify-error.js';
import {
  closeBody,
  readWholeBody,
  readWholeBodyForCheck,
  type BodyConsumer,
  type BodyRead,
  type ResponseBody,
  type ResponseHead,
} from './body.js';
import type { AddressResolver } from '../target-policy.js';
import type { AltSvcLog } from './alt-svc.js';
import { proxyOf } from './proxy.js';
import { CheckedBody, ResponseCheck, type CheckedHeaders } from './response-checks.js';
import type { Method } from '../../contracts/request.js';
import { connectionPhases, TimedConnector, type ConnectionTimeline, type RequestSent } from './connector.js';
import { exchangeBound, exchangeTimeout } from './wire.js';

export interface TimedClientOptions {
  target: JobTarget;
  /** Per-request bound on the whole exchange, from connecting to the last body byte. */
  timeoutMs: number;
  resumeTlsSessions?: boolean;
  /** Where the client may connect (worker/target-policy.ts). */
  policy: AddressResolver;
  /** Where every response's Alt-Svc header is noted (the job's). */
  altSvc?: AltSvcLog;
}

export interface TimedRequestOptions<T extends BodyRead = BodyRead> {
  seq: number;
  /** Default the target's (GET unless it names one); only the target's method sends its body. */
  method?: string;
  /** Hold the response to the target's checks. @defaultValue true; false for a request that is not the target's own (a CORS preflight) */
  checked?: boolean;
  /** Path and query on the target's origin; default the target URL's. */
  path?: string;
  /** Headers for this request (lower-case names), on top of (and overriding) the target's. */
  headers?: Record<string, string>;
  /** Ask the server to close after this response (`Connection: close`), forcing a new connection next time. */
  closeAfter?: boolean;
  signal?: AbortSignal;
  /**
   * Reads (or deliberately does not read) the body. Default: read it all. A body left unread
   * holds the connection: undici completes a response it has fully buffered (about 64 KiB), and
   * destroying the body of one it has not discards the connection.
   */
  consumeBody?: BodyConsumer<T>;
}

/** One request: its sample, and what a probe may need beyond it. */
export interface TimedExchange<T extends BodyRead> {
  sample: RequestSample;
  /** Absent when no response arrived. */
  head?: ResponseHead;
  /** What the body consumer returned; absent when it did not finish. */
  body?: T;
  /**
   * Bytes read from the TCP connection for this response (see TimedConnector.bytesReadOn).
   * Exact when the previous response on the connection was read to its end.
   */
  wireBytes?: number;
}

/**
 * Given to `Client.destroy`, which otherwise makes a new error per call whose stack Node formats
 * when it destroys the socket: a tenth of a one-request job's CPU. Made once, its stack is formatted once.
 */
const CLIENT_CLOSED = new errors.ClientDestroyedError();

type PlainRequestOptions = Omit<TimedRequestOptions, 'consumeBody'>;

/** How a client reaches its target, which says what a reused connection skipped. */
export interface ConnectionShape {
  /** The URL's host is an IP address: nothing is resolved. */
  hostIsLiteral: boolean;
  /** Connections go through a proxy's tunnel (a reused one skips its CONNECT too). */
  proxied: boolean;
  secure: boolean;
}

/** Whether a target URL's host is an IP address. */
export function isIpLiteralHost(url: URL): boolean {
  return /^[\d.]+$|^\[/.test(url.hostname);
}

/** A request's raw timestamps (performance.now(), ms). */
export interface RequestTimes {
  start: number;
  /** When its head was written, and on which connection; absent when it never was. */
  sent: RequestSent | undefined;
  newConnection: boolean;
  headersAt: number;
  end: number;
}

/** A request's phase durations from its raw timestamps, computed once. */
export function requestPhases(shape: ConnectionShape, times: RequestTimes): PhaseTimes {
  const { start, sent, newConnection, headersAt, end } = times;
  let phases: PhaseTimes = {};
  const c = sent?.timeline;
  if (newConnection && c?.connected !== undefined) {
    phases = connectionPhases(c);
  } else if (!newConnection) {
    // A reused connection skipped these; they cost nothing, which is the point.
    if (!shape.hostIsLiteral) phases.resolve = 0;
    phases.connect = 0;
    if (shape.proxied) phases.proxy = 0;
    if (shape.secure) phases.tls = 0;
  }
  if (sent) phases.processing = headersAt - sent.at;
  phases.transfer = end - headersAt;
  phases.total = end - start;
  return phases;
}

export class TimedHttpClient implements ConnectionShape {
  private readonly connector: TimedConnector;
  private readonly client: Client;
  private readonly url: URL;
  private readonly path: string;
  readonly hostIsLiteral: boolean;
  readonly proxied: boolean;
  readonly secure: boolean;
  /** The target's headers with lower-case names, so a request's own headers replace them rather than doubling them. */
  private readonly targetHeaders: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly altSvc: AltSvcLog | undefined;
  /** The target's method and body: every request's unless it names its own method. */
  private readonly method: Method;
  private readonly body: string | undefined;
  /** What every response must be to count (the target's checks; a 2xx status by default). */
  readonly check: ResponseCheck;
  /** `request`s under way: what the time bound and the job's signal cut. */
  private readonly inFlight = new Set<PendingSample>();
  /** One timer for every `request`'s time bound, re-armed rather than made anew per request. */
  private bound: NodeJS.Timeout | undefined;
  /** The signal whose abort cuts the requests under way (the job's; one listener, not one per request). */
  private watched: AbortSignal | undefined;

  constructor(options: TimedClientOptions) {
    this.altSvc = options.altSvc;
    this.url = new URL(options.target.url);
    this.path = this.url.pathname + this.url.search;
    this.secure = this.url.protocol === 'https:';
    this.targetHeaders = Object.fromEntries(
      Object.entries(options.target.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
    );
    this.hostIsLiteral = isIpLiteralHost(this.url);

    this.method = options.target.method ?? 'GET';
    this.body = options.target.body;
    this.check = new ResponseCheck(options.target.checks);
    const proxy = proxyOf(options.target);
    this.proxied = proxy !== undefined;
    this.connector = new TimedConnector({
      tls: options.target.tls,
      resumeTlsSessions: options.resumeTlsSessions ?? false,
      alpn: ['http/1.1'],
      timeoutMs: options.timeoutMs,
      policy: options.policy,
      proxy,
    });
    this.client = new Client(this.url.origin, {
      connect: this.connector.connect,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 60_000,
      maxResponseSize: JOB_LIMITS.responseBytes,
    });
    this.timeoutMs = options.timeoutMs;
  }

  get connections(): readonly ConnectionTimeline[] {
    return this.connector.connections;
  }

  /** One request whose body is read to its end and counted, not kept: its sample alone. */
  request(opts: PlainRequestOptions): Promise<RequestSample> {
    return new Promise((resolve) => {
      const pending = new PendingSample(
        this,
        opts.seq,
        this.connector.connections.length,
        resolve,
        opts.closeAfter ?? false,
      );
      const signal = opts.signal;
      if (signal) {
        if (signal.aborted) return pending.onError(signal.reason);
        this.watch(signal);
      }
      if (this.inFlight.size === 0) this.armBound();
      this.inFlight.add(pending);
      this.client.dispatch(
        {
          ...this.methodAndBody(opts.method),
          path: opts.path ?? this.path,
          headers: opts.headers ? { ...this.targetHeaders, ...opts.headers } : this.targetHeaders,
          reset: opts.closeAfter ?? false,
        },
        pending,
      );
    });
  }

  /** Called by a PendingSample when undici is done with its request. */
  settle(pending: PendingSample, err: Error | undefined): void {
    this.inFlight.delete(pending);
    const end = performance.now();
    if (err !== undefined) {
      pending.resolve(
        this.failedSample(pending.seq, pending.start, pending.opened, pending.status, pending.serverClosed, err),
      );
      return;
    }
    const sample = this.answeredSample(
      pending.seq,
      pending.start,
      pending.opened,
      this.requestSentSince(pending.start),
      pending.headersAt,
      end,
      pending.status!,
      pending.bodyBytes,
      pending.serverClosed!,
    );
    const failed = this.check.failure(sample.status!, pending.headers, pending.body?.bytes);
    if (failed) sample.error = failed;
    pending.resolve(sample);
  }

  /** A request's method, and the target's body when it is the target's method (a preflight's OPTIONS sends none). */
  private methodAndBody(method: string | undefined): { method: string; body?: string } {
    if (method !== undefined && method !== this.method) return { method };
    return this.body === undefined ? { method: this.method } : { method: this.method, body: this.body };
  }

  /** Called by a PendingSample on the response head. */
  noteAltSvc(value: string): void {
    this.altSvc?.note(value);
  }

  private armBound(): void {
    if (this.bound) this.bound.refresh();
    else this.bound = setTimeout(this.onBound, this.timeoutMs).unref();
  }

  /** Cuts the requests whose bound has passed; re-arms for the earliest of the others. */
  private readonly onBound = (): void => {
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const pending of this.inFlight) {
      const due = pending.start + this.timeoutMs;
      // Timers and performance.now() may disagree by a fraction of a millisecond.
      if (due - now < 1) pending.cancel(exchangeTimeout(this.timeoutMs, pending.status !== undefined));
      else next = Math.min(next, due);
    }
    if (next !== Number.POSITIVE_INFINITY) this.bound = setTimeout(this.onBound, next - now).unref();
  };

  private watch(signal: AbortSignal): void {
    if (signal === this.watched) return;
    this.watched?.removeEventListener('abort', this.onAbort);
    this.watched = signal;
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => {
    for (const pending of this.inFlight) pending.cancel(this.watched!.reason);
  };

  async exchange<T extends BodyRead = BodyRead>(opts: TimedRequestOptions<T>): Promise<TimedExchange<T>> {
    const opened = this.connector.connections.length;
    const previous = this.connector.lastRequestSent?.timeline;
    const previousBytes = previous ? this.connector.bytesReadOn(previous) : 0;
    const start = performance.now();
    let head: ResponseHead | undefined;
    let body: ResponseBody | undefined;
    let serverClosed: boolean | undefined;
    const bound = exchangeBound(this.timeoutMs, opts.signal, () => head !== undefined);
    try {
      const response = await this.client.request({
        ...this.methodAndBody(opts.method),
        path: opts.path ?? this.path,
        headers: { ...this.targetHeaders, ...opts.headers },
        reset: opts.closeAfter ?? false,
        signal: bound.signal,
      });
      const headersAt = performance.now();
      head = { statusCode: response.statusCode, headers: response.headers };
      this.altSvc?.note(response.headers['alt-svc']);
      body = response.body;
      serverClosed = saysClose(response.headers.connection);
      const consume = (opts.consumeBody ??
        (this.check.readsBody ? readWholeBodyForCheck : readWholeBody)) as BodyConsumer<T>;
      const read = await consume(body, head);
      const end = performance.now();
      const used = this.requestSentSince(start);
      const sample = this.answeredSample(
        opts.seq,
        start,
        opened,
        used,
        headersAt,
        end,
        head.statusCode,
        read.bytes,
        serverClosed,
      );
      // A body the consumer did not keep (left unread, decoded) is not checked; its status and headers are.
      const failed =
        opts.checked === false ? undefined : this.check.failure(head.statusCode, head.headers, read.checked);
      if (failed) sample.error = failed;
      return {
        sample,
        head,
        body: read,
        wireBytes: used
          ? this.connector.bytesReadOn(used.timeline) - (used.timeline === previous ? previousBytes : 0)
          : undefined,
      };
    } catch (err) {
      // A body its consumer gave up on would hold the connection; let it go.
      if (body && !body.destroyed) closeBody(body);
      return { sample: this.failedSample(opts.seq, start, opened, head?.statusCode, serverClosed, err), head };
    } finally {
      bound.release();
    }
  }

  /** The request this client wrote last, if it was written after `start` (else none was). */
  private requestSentSince(start: number): RequestSent | undefined {
    const sent = this.connector.lastRequestSent;
    return sent && sent.at >= start ? sent : undefined;
  }

  private answeredSample(
    seq: number,
    start: number,
    opened: number,
    sent: RequestSent | undefined,
    headersAt: number,
    end: number,
    status: number,
    bodyBytes: number,
    serverClosed: boolean,
  ): RequestSample {
    const newConnection = this.connector.connections.length > opened;
    const sample: RequestSample = {
      seq,
      status,
      newConnection,
      phases: requestPhases(this, { start, sent, newConnection, headersAt, end }),
      bodyBytes,
      serverClosed,
    };
    if (newConnection && sent?.timeline.tls) sample.tlsResumed = sent.timeline.tls.resumed;
    return sample;
  }

  private failedSample(
    seq: number,
    start: number,
    opened: number,
    status: number | undefined,
    serverClosed: boolean | undefined,
    err: unknown,
  ): RequestSample {
    // A TLS alert after the handshake (a client certificate the server required) closed the
    // socket under the request: the alert, not the closed socket, is why.
    const alert = this.connector.connections.at(-1)?.tlsAlert;
    return {
      seq,
      status,
      newConnection: this.connector.connections.length > opened,
      phases: { total: performance.now() - start },
      bodyBytes: 0,
      serverClosed,
      error: this.withSizeCapNamed(classifyError(alert ?? err)),
    };
  }

  /** undici's words for the size cap name no size: say which. */
  private withSizeCapNamed(error: ProbeError): ProbeError {
    return error.code === 'RESPONSE_TOO_LARGE'
      ? {
          ...error,
          message: `the body passed ${JOB_LIMITS.responseBytes} bytes, the per-job cap on one response: reading stopped there`,
        }
      : error;
  }

  async close(): Promise<void> {
    clearTimeout(this.bound);
    this.watched?.removeEventListener('abort', this.onAbort);
    await this.client.destroy(CLIENT_CLOSED);
  }
}

/** A `Connection` header that asks to close (values are case-insensitive tokens). */
export function saysClose(value: string | string[] | undefined): boolean {
  return typeof value === 'string' && value.toLowerCase() === 'close';
}

/** A raw header list as names in lower case, a repeated header's values joined as undici joins them. */
function headersOf(rawHeaders: Buffer[]): CheckedHeaders {
  // No prototype: a server's header named `constructor` or `__proto__` is a header like any other.
  const headers: Record<string, string> = Object.create(null);
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toString('latin1').toLowerCase();
    const value = rawHeaders[i + 1].toString('latin1');
    headers[name] = Object.hasOwn(headers, name) ? `${headers[name]}, ${value}` : value;
  }
  return headers;
}

const CONNECTION = 'connection';
const ALT_SVC = 'alt-svc';

/**
 * When a response ends its connection, undici destroys the socket with a new
 * `InformationalError('reset')` right after the handler's `onComplete` returns, from inside
 * llhttp's wasm frames, where capturing a stack is slow: ~70 µs of a one-request job's ~600 µs of
 * CPU (bench/README.md, "Per job"). undici drops that error unseen, so errors made until the
 * limit is restored (the rest of undici's handling of this read, and `process.nextTick` callbacks
 * queued before ours) take no stack; it is back before any promise, I/O or timer callback runs.
 */
function withoutErrorStacksThisTick(): void {
  const limit = Error.stackTraceLimit;
  if (limit === 0) return;
  Error.stackTraceLimit = 0;
  process.nextTick(() => {
    Error.stackTraceLimit = limit;
  });
}

/**
 * undici's handler for one `request`: records when the head came and counts the body's bytes,
 * with no stream and no parsed header object. Only the two headers a sample needs are read
 * from the raw list (Buffers, names in any case).
 */
class PendingSample implements Dispatcher.DispatchHandler {
  readonly start = performance.now();
  status: number | undefined = undefined;
  headersAt = 0;
  bodyBytes = 0;
  serverClosed: boolean | undefined = undefined;
  /** Kept only when the target's checks read them. */
  headers: CheckedHeaders | undefined = undefined;
  body: CheckedBody | undefined = undefined;
  private abort: ((err: Error) => void) | undefined = undefined;
  /** Why the request was cut before undici gave it an abort function. */
  private reason: Error | undefined = undefined;

  constructor(
    private readonly owner: TimedHttpClient,
    readonly seq: number,
    /** Connections the client had opened before this request. */
    readonly opened: number,
    readonly resolve: (sample: RequestSample) => void,
    /** The request asked to close its connection after the response. */
    private readonly closeAfter: boolean,
  ) {}

  cancel(err: Error): void {
    if (this.abort) this.abort(err);
    else this.reason ??= err;
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.reason) abort(this.reason);
    else this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    // 1xx: an interim head; the response's own follows.
    if (statusCode < 200) return true;
    this.headersAt = performance.now();
    this.status = statusCode;
    this.serverClosed = false;
    const check = this.owner.check;
    if (check.readsHeaders) this.headers = headersOf(rawHeaders);
    if (check.readsBody) this.body = new CheckedBody();
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i];
      if (name.length === CONNECTION.length && name.toString('latin1').toLowerCase() === CONNECTION)
        this.serverClosed = rawHeaders[i + 1].toString('latin1').toLowerCase() === 'close';
      else if (name.length === ALT_SVC.length && name.toString('latin1').toLowerCase() === ALT_SVC)
        this.owner.noteAltSvc(rawHeaders[i + 1].toString('latin1'));
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.bodyBytes += chunk.length;
    this.body?.add(chunk);
    return true;
  }

  onComplete(): void {
    this.owner.settle(this, undefined);
    // After the sample's end was stamped (in settle), before undici makes its error.
    if (this.serverClosed || this.closeAfter) withoutErrorStacksThisTick();
  }

  onError(err: Error): void {
    this.owner.settle(this, err);
  }
}
