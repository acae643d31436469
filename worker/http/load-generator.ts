// The load probe's engine: `concurrency` lanes over C channels (one connection each: an undici
// Client for HTTP/1.1, a node:http2 session for h2), each lane one request in flight at a time,
// lanes spread evenly over the connections. Closed loop:
// a lane sends its next request when the previous one is answered. Open loop: lanes take
// requests from one schedule (request n is due at n / rate) in order, like a client queueing
// for a free connection; a request sent late is timed from when it was due, so a stalled target
// shows in the latency (coordinated omission corrected).
//
// The timed path does per request only what the numbers need: performance.now() at send and at
// completion (and once more in the open loop), histogram records and counters, and one small
// dispatch handler object (no promise, no body stream); errors are classified when they happen.
// Bounds: each request as a whole within `timeoutMs` (one sweep timer for the run), and the
// job's signal cuts everything in flight and closes every connection at once.
import http2 from 'node:http2';
import { performance } from 'node:perf_hooks';
import type { Client, Dispatcher } from 'undici';
import type { ErrorCode, ProbeError } from '../../contracts/common.js';
import type { JobTls } from '../../contracts/job.js';
import type { LoadMode, LoadStopReason } from '../../contracts/probes/load.js';
import { newLatencyHistogram, recordMs, type Histogram } from '../../common/latency-histogram.js';
import { classifyError } from '../classify-error.js';
import type { AddressResolver } from '../target-policy.js';
import { CountingConnector } from './counting-connector.js';
import { h2SessionOver } from './h2-session.js';
import type { ProxySettings } from './proxy.js';
import { MAX_CONSECUTIVE_FAILURES } from './sequence.js';
import { overResponseCap, responseTooLarge, WireError } from './wire.js';
import type { AltSvcLog } from './alt-svc.js';

export interface LoadOptions {
  url: string;
  headers?: Record<string, string>;
  /** Connect through this proxy's CONNECT tunnel. */
  proxy?: ProxySettings;
  /** The target's method and body. @defaultValue GET, none */
  method?: string;
  body?: string;
  tls?: JobTls;
  mode: LoadMode;
  connections: number;
  /** h2 only: concurrent streams per connection. */
  streams: number;
  durationMs: number;
  /** Stop after this many requests sent. */
  maxRequests?: number;
  /** Open loop: requests per second. Closed loop when absent. */
  rate?: number;
  timeoutMs: number;
  tlsResume: boolean;
  /** The job's time bound: stops the run and cuts requests in flight. */
  signal: AbortSignal;
  policy: AddressResolver;
  /** Alt-Svc of each lane's first response is noted here (later ones would cost the hot path). */
  altSvc?: Pick<AltSvcLog, 'note'>;
  /** Runs sharing one load (worker/http/load-threads.ts): they start at this instant (ms since
   * the epoch, as performance.timeOrigin + performance.now()), so the open loop's schedule is
   * one, and take request numbers from `taken[0]` (shared between threads) so the request bound
   * and the schedule hold for them together. */
  shared?: { startAt: number; taken: Int32Array };
}

export type StopReason = LoadStopReason;

export interface LoadOutcome {
  concurrency: number;
  /** Answered requests; from intended send time in the open loop. */
  latency: Histogram;
  /** Open loop only: answered requests from their actual send time. */
  serviceTime?: Histogram;
  sent: number;
  completed: number;
  failed: number;
  errors: Partial<Record<ErrorCode, number>>;
  lastError?: ProbeError;
  /** Index = status / 100. */
  statusClasses: number[];
  bodyBytes: number;
  connectionsOpened: number;
  protocols: Record<string, number>;
  /** First request sent to last lane finished. */
  durationMs: number;
  /** Open loop: requests due within the run. */
  scheduled?: number;
  stoppedBy: StopReason;
  /** The share of the run the event loop running it was busy (0..1): near 1, the client, not
   * the target, decided how fast requests went. */
  eventLoopUtilization: number;
}

export async function generateLoad(options: LoadOptions): Promise<LoadOutcome> {
  const h2 = options.mode === 'h2';
  const connector = new CountingConnector({
    tls: options.tls,
    proxy: options.proxy,
    h2,
    resumeTlsSessions: options.tlsResume,
    timeoutMs: options.timeoutMs,
    policy: options.policy,
  });
  // undici only where it is used: a thread running an HTTP/2 load never loads it.
  const undici = h2 ? undefined : await import('undici');
  const channels = Array.from({ length: options.connections }, () =>
    undici ? new UndiciChannel(options, connector, undici.Client) : new H2Channel(options, connector),
  );
  const run = new LoadRun(options, channels, h2 ? options.streams : 1);
  try {
    await run.start();
  } finally {
    await Promise.all(channels.map((channel) => channel.destroy()));
  }
  return {
    concurrency: run.lanes.length,
    latency: run.latency,
    serviceTime: run.serviceTime,
    sent: run.sent,
    completed: run.completed,
    failed: run.failed,
    errors: run.errors,
    lastError: run.lastError,
    statusClasses: run.statusClasses,
    bodyBytes: run.bodyBytes,
    connectionsOpened: connector.opened,
    protocols: { ...connector.protocols },
    durationMs: run.endedAt - run.startedAt,
    ...(options.rate !== undefined ? { scheduled: run.limit } : {}),
    stoppedBy: run.stoppedBy ?? 'duration',
    eventLoopUtilization: run.eventLoopUtilization,
  };
}

/** Where a lane's requests go: one connection, opened when first needed and again after it closed. */
interface Channel {
  send(request: LaneRequest): void;
  /** Closes the connection and cuts whatever is in flight on it. */
  destroy(): Promise<void>;
}

/** Methods whose requests node:http2 ends with their headers unless told otherwise. */
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'DELETE']);

/** HTTP/1.1: an undici Client, one connection, a lane's LaneRequest as the dispatch handler. */
class UndiciChannel implements Channel {
  private readonly client: Client;
  private readonly dispatchOptions: Dispatcher.DispatchOptions;

  constructor(options: LoadOptions, connector: CountingConnector, UndiciClient: typeof Client) {
    const url = new URL(options.url);
    this.client = new UndiciClient(url.origin, {
      // One lane per connection, which sends its next request only when the previous one is
      // answered; allowing a second lets undici write it in that same tick (as wrk and autocannon
      // do) instead of one event-loop turn later.
      pipelining: 2,
      connect: connector.connect,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    this.dispatchOptions = {
      path: url.pathname + url.search,
      method: options.method ?? 'GET',
      ...(options.body === undefined ? {} : { body: options.body }),
      headers: options.headers,
      // `new`: Connection: close, so the next request on this connection opens a new one.
      reset: options.mode === 'new',
    };
  }

  send(request: LaneRequest): void {
    this.client.dispatch(this.dispatchOptions, request);
  }

  destroy(): Promise<void> {
    return this.client.destroy(RUN_STOPPED).catch(() => {});
  }
}

/**
 * HTTP/2: a node:http2 session over a connection the counting connector opened (ALPN h2 on
 * https, prior knowledge on http), `streams` lanes on it. node:http2 directly, not undici's
 * HTTP/2 client: per request it costs what a bare node:http2 loop does (bench/h2-bare-process.ts).
 * Requests sent while the connection opens wait for it; a session that closed (GOAWAY, a reset
 * connection) is replaced by the next request, as an undici Client reconnects.
 */
class H2Channel implements Channel {
  private session: http2.ClientHttp2Session | undefined;
  private opening = false;
  private waiting: LaneRequest[] = [];
  private destroyed = false;
  private readonly origin: string;
  /** What undici's Client gives its connector: the checked address replaces `hostname`; `host` names the server (SNI, certificate). */
  private readonly connectOptions: { host: string; hostname: string; port: string; protocol: string };
  private readonly headers: http2.OutgoingHttpHeaders;
  private readonly body: string | undefined;
  /** None where node:http2's default ends the stream as we would: given any, it costs ~7 µs a
   * request more (its priority defaults are added to a copy of them). */
  private readonly requestOptions: http2.ClientSessionRequestOptions | undefined;

  constructor(
    options: LoadOptions,
    private readonly connector: CountingConnector,
  ) {
    const url = new URL(options.url);
    this.origin = url.origin;
    this.connectOptions = {
      host: url.host,
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port,
      protocol: url.protocol,
    };
    this.headers = { ...options.headers, ':method': options.method ?? 'GET', ':path': url.pathname + url.search };
    this.body = options.body;
    this.requestOptions =
      options.body === undefined && BODYLESS_METHODS.has(options.method ?? 'GET')
        ? undefined
        : { endStream: options.body === undefined };
  }

  send(request: LaneRequest): void {
    const session = this.session;
    if (session !== undefined && !session.closed && !session.destroyed) return this.start(session, request);
    this.waiting.push(request);
    if (!this.opening) this.open();
  }

  private start(session: http2.ClientHttp2Session, request: LaneRequest): void {
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(this.headers, this.requestOptions);
    } catch (err) {
      return request.onError(err as Error);
    }
    request.watch(stream);
    if (this.body !== undefined) stream.end(this.body);
  }

  private open(): void {
    this.opening = true;
    this.session = undefined;
    this.connector.connect(this.connectOptions, (err, socket) => {
      this.opening = false;
      const waiting = this.waiting;
      this.waiting = [];
      if (err || socket === null || this.destroyed) {
        socket?.destroy();
        for (const request of waiting) request.onError(err ?? RUN_STOPPED);
        return;
      }
      const session = h2SessionOver(this.origin, socket);
      this.session = session;
      for (const request of waiting) this.start(session, request);
    });
  }

  destroy(): Promise<void> {
    this.destroyed = true;
    const waiting = this.waiting;
    this.waiting = [];
    for (const request of waiting) request.onError(RUN_STOPPED);
    const session = this.session;
    if (session === undefined || session.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      session.once('close', () => resolve());
      session.destroy();
    });
  }
}

/** How often requests in flight are held against `timeoutMs`: a tenth of it, between 10 and 250 ms. */
function sweepIntervalMs(timeoutMs: number): number {
  return Math.min(250, Math.max(10, timeoutMs / 10));
}

/** Given to undici for requests the run cuts itself (a stop, not the target's doing); made once. */
const RUN_STOPPED = new Error('the load run stopped');

class LoadRun {
  readonly latency = newLatencyHistogram();
  readonly serviceTime: Histogram | undefined;
  readonly lanes: Lane[] = [];
  /** Requests that may be sent: the request bound, and in the open loop those due within the duration. */
  readonly limit: number;
  /** Open loop: milliseconds between intended send times; 0 in the closed loop. */
  readonly intervalMs: number;
  private readonly maxFailuresInARow: number;
  readonly altSvc: Pick<AltSvcLog, 'note'> | undefined;

  startedAt = 0;
  endedAt = 0;
  eventLoopUtilization = 0;
  /** `[0]`: the next request number a lane may take. */
  private readonly taken: Int32Array;
  sent = 0;
  completed = 0;
  failed = 0;
  failuresInARow = 0;
  bodyBytes = 0;
  readonly statusClasses: number[] = new Array<number>(10).fill(0);
  readonly errors: Partial<Record<ErrorCode, number>> = {};
  lastError: ProbeError | undefined;
  stoppedBy: StopReason | undefined;
  /** The run cut its requests in flight (failures, deadline): what they do from then on is not the target's. */
  private cut = false;
  private running = 0;
  private finished: () => void = () => {};

  constructor(
    private readonly options: LoadOptions,
    private readonly channels: Channel[],
    lanesPerChannel: number,
  ) {
    this.altSvc = options.altSvc;
    this.taken = options.shared?.taken ?? new Int32Array(1);
    this.intervalMs = options.rate === undefined ? 0 : 1000 / options.rate;
    const due = options.rate === undefined ? Infinity : Math.ceil(options.durationMs / this.intervalMs);
    this.limit = Math.min(options.maxRequests ?? Infinity, due);
    this.serviceTime = options.rate === undefined ? undefined : newLatencyHistogram();
    this.maxFailuresInARow = MAX_CONSECUTIVE_FAILURES * channels.length * lanesPerChannel;
    for (let i = 0; i < lanesPerChannel; i++) for (const channel of channels) this.lanes.push(new Lane(this, channel));
  }

  start(): Promise<void> {
    const { signal, durationMs, timeoutMs } = this.options;
    const done = new Promise<void>((resolve) => (this.finished = resolve));
    const onAbort = () => this.stop('deadline');
    signal.addEventListener('abort', onAbort, { once: true });
    const busy = performance.eventLoopUtilization();
    this.startedAt = this.options.shared ? this.options.shared.startAt - performance.timeOrigin : performance.now();
    // libuv timers keep millisecond loop time and may fire up to 1 ms early by performance.now();
    // re-arm for what is left so a run never ends before its duration.
    let durationTimer: NodeJS.Timeout;
    const stopWhenDue = () => {
      const left = this.startedAt + durationMs - performance.now();
      if (left > 0) durationTimer = setTimeout(stopWhenDue, Math.ceil(left));
      else this.stop('duration');
    };
    durationTimer = setTimeout(stopWhenDue, Math.max(0, this.startedAt + durationMs - performance.now()));
    // undici's timeouts bound each wait (headers, the gap between two body chunks), so a body that
    // trickles a byte at a time never trips them: one timer for the run bounds every request whole.
    const sweep = setInterval(() => {
      const now = performance.now();
      for (const lane of this.lanes) lane.cutIfOverdue(now, timeoutMs);
    }, sweepIntervalMs(timeoutMs));
    this.running = this.lanes.length;
    if (signal.aborted) this.stop('deadline');
    for (const lane of this.lanes) lane.next();
    return done.finally(() => {
      this.eventLoopUtilization = performance.eventLoopUtilization(busy).utilization;
      clearTimeout(durationTimer);
      clearInterval(sweep);
      signal.removeEventListener('abort', onAbort);
    });
  }

  /**
   * Lanes stop taking requests. On the duration or the request bound, requests in flight may
   * finish (each within `timeoutMs`). On failures or the deadline, lanes waiting for a due time
   * stop, requests in flight are cut and the connections closed; the deadline does so also when
   * the run had already stopped and was only waiting for its requests in flight.
   */
  stop(reason: StopReason): void {
    if (this.cut || this.endedAt !== 0) return;
    if (this.stoppedBy === undefined || (reason === 'deadline' && this.stoppedBy !== 'failures'))
      this.stoppedBy = reason;
    if (reason === 'duration' || reason === 'requests') return;
    this.cut = true;
    for (const lane of this.lanes) lane.stopNow();
    for (const channel of this.channels) void channel.destroy();
  }

  /** Takes the next request index, or -1 when the run is over. */
  take(): number {
    if (this.stoppedBy !== undefined) return -1;
    const n = Atomics.add(this.taken, 0, 1);
    if (n >= this.limit) {
      if (n >= (this.options.maxRequests ?? Infinity)) this.stop('requests');
      return -1;
    }
    return n;
  }

  recordAnswer(request: LaneRequest, end: number): void {
    // Closed loop: from the send. Open loop: from when it was due, or from the send if a timer
    // woke the lane a little early.
    const { sentAt, dueAt } = request;
    recordMs(this.latency, end - (this.intervalMs === 0 || sentAt < dueAt ? sentAt : dueAt));
    if (this.serviceTime) recordMs(this.serviceTime, end - sentAt);
    this.completed++;
    this.statusClasses[(request.status / 100) | 0]++;
    this.failuresInARow = 0;
  }

  recordFailure(err: Error): void {
    // Requests cut by our own stop are not the target's failures.
    if (this.cut) return;
    const error = classifyError(err);
    this.failed++;
    this.errors[error.code] = (this.errors[error.code] ?? 0) + 1;
    this.lastError = error;
    if (++this.failuresInARow >= this.maxFailuresInARow) this.stop('failures');
  }

  laneDone(): void {
    if (--this.running === 0) {
      this.endedAt = performance.now();
      this.finished();
    }
  }
}

/** One request in flight at a time, each with a small handler of its own (LaneRequest). */
class Lane {
  /** The request in flight, if any. */
  private request: LaneRequest | undefined;
  /** Open loop: when the next request is due. */
  private dueAt = 0;
  private wait: NodeJS.Timeout | undefined;
  private done = false;
  private altSvcRead = false;
  private readonly sendNow = () => {
    this.wait = undefined;
    this.send();
  };

  constructor(
    readonly run: LoadRun,
    private readonly channel: Channel,
  ) {}

  next(): void {
    const run = this.run;
    const n = run.take();
    if (n < 0) return this.finish();
    if (run.intervalMs === 0) return this.send();
    this.dueAt = run.startedAt + n * run.intervalMs;
    const ahead = this.dueAt - performance.now();
    if (ahead >= 1) this.wait = setTimeout(this.sendNow, ahead);
    else this.send();
  }

  /** The run stops at once: no more waiting, the request in flight cut. */
  stopNow(): void {
    if (this.wait !== undefined) {
      clearTimeout(this.wait);
      this.wait = undefined;
      this.finish();
    }
    this.request?.cut(RUN_STOPPED);
  }

  /** Cuts the request in flight when it has run for longer than `timeoutMs`, as a timeout of the target. */
  cutIfOverdue(now: number, timeoutMs: number): void {
    const request = this.request;
    if (request === undefined || now - request.sentAt <= timeoutMs) return;
    request.cut(
      request.status === 0
        ? new WireError(`no response within ${timeoutMs} ms`, 'EWIRE_TIMEOUT')
        : new WireError(`the body did not end within ${timeoutMs} ms`, 'EWIRE_BODY_TIMEOUT'),
    );
  }

  /** The lane's first response head: its Alt-Svc header, if any, is noted (one per lane, not per
   * request); `altSvcOf` reads it from the head only then. */
  noteAltSvc<H>(head: H, altSvcOf: (head: H) => string | undefined): void {
    if (this.altSvcRead) return;
    this.altSvcRead = true;
    const value = altSvcOf(head);
    if (value !== undefined) this.run.altSvc?.note(value);
  }

  answered(request: LaneRequest): void {
    const end = performance.now();
    this.request = undefined;
    this.run.recordAnswer(request, end);
    this.next();
  }

  failed(err: Error): void {
    this.request = undefined;
    this.run.recordFailure(err);
    // Errors can come synchronously from dispatch; continue on a fresh stack.
    queueMicrotask(() => this.next());
  }

  private send(): void {
    const run = this.run;
    run.sent++;
    const request = new LaneRequest(this, this.dueAt, performance.now());
    this.request = request;
    this.channel.send(request);
  }

  /** Once per lane, however it ends. */
  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.run.laneDone();
  }
}

/**
 * One request: undici's dispatch handler (HTTP/1.1), or the listener of a node:http2 stream
 * (`watch`). Its first completion or error ends it, and whatever is reported after that is
 * ignored; a request nothing ever reports on is cut by the run itself (`cut`), at `timeoutMs`
 * or when it stops.
 */
class LaneRequest implements Dispatcher.DispatchHandler {
  /** 0 until the response head arrives. */
  status = 0;
  /** Body bytes of this response, against the per-job cap. */
  private bytes = 0;
  private abort: ((err: Error) => void) | undefined;
  private stream: http2.ClientHttp2Stream | undefined;
  private ended = false;

  constructor(
    private readonly lane: Lane,
    /** Open loop: when it was due. */
    readonly dueAt: number,
    readonly sentAt: number,
  ) {}

  /** Ends it now with `err`, whether or not anything ever reports it. */
  cut(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.abort?.(err);
    this.stream?.close(http2.constants.NGHTTP2_CANCEL);
    this.lane.failed(err);
  }

  onConnect(abort: (err: Error) => void): void {
    this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (this.ended) return false;
    this.status = statusCode;
    this.lane.noteAltSvc(rawHeaders, altSvcOfRaw);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.ended) return false;
    this.lane.run.bodyBytes += chunk.length;
    this.bytes += chunk.length;
    if (overResponseCap(this.bytes)) this.cut(responseTooLarge());
    return true;
  }

  onComplete(): void {
    if (this.ended) return;
    this.ended = true;
    this.lane.answered(this);
  }

  onError(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.lane.failed(err);
  }

  /** HTTP/2: follows `stream` to its end. node:http2 closes a stream that ended well only after
   * its 'end' (onStreamClose waits for it), so 'close' alone tells an answer (ended, with a
   * status) from a stream reset or cut short, one listener fewer per request. */
  watch(stream: http2.ClientHttp2Stream): void {
    this.stream = stream;
    stream.on('response', (headers) => {
      if (this.ended) return;
      this.status = Number(headers[':status']);
      this.lane.noteAltSvc(headers, altSvcOfH2);
    });
    stream.on('data', (chunk: Buffer) => this.onData(chunk));
    stream.on('error', (err: Error) => this.onError(err));
    stream.on('close', () => {
      if (this.ended) return;
      if (stream.readableEnded && this.status !== 0) return this.onComplete();
      this.onError(
        stream.readableEnded
          ? new WireError('HTTP/2 stream ended without response headers', 'EWIRE_MALFORMED')
          : new WireError(
              `HTTP/2 stream closed before ${this.status === 0 ? 'a response' : 'the end of the body'} (RST_STREAM code ${stream.rstCode ?? 'none'})`,
              'EWIRE_CLOSED',
            ),
      );
    });
  }
}

function altSvcOfRaw(rawHeaders: Buffer[]): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2)
    if (rawHeaders[i].toString('latin1').toLowerCase() === 'alt-svc') return rawHeaders[i + 1].toString('latin1');
  return undefined;
}

function altSvcOfH2(headers: http2.IncomingHttpHeaders): string | undefined {
  const value = headers['alt-svc'];
  return Array.isArray(value) ? value.join(', ') : value;
}
