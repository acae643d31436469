// The load probe's engine: `concurrency` lanes over C undici Clients (one connection each), each
// lane one request in flight at a time, lanes spread evenly over the connections. Closed loop:
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
import { performance } from 'node:perf_hooks';
import { Client, type Dispatcher } from 'undici';
import type { ErrorCode, ProbeError } from '../../contracts/common.js';
import type { JobTls } from '../../contracts/job.js';
import type { LoadMode } from '../../contracts/probes/load.js';
import { newLatencyHistogram, recordMs, type Histogram } from '../../common/latency-histogram.js';
import { classifyError } from '../classify-error.js';
import type { TargetPolicy } from '../target-policy.js';
import { CountingConnector } from './counting-connector.js';
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
  policy: TargetPolicy;
  /** Alt-Svc of each lane's first response is noted here (later ones would cost the hot path). */
  altSvc?: AltSvcLog;
}

export type StopReason = 'duration' | 'requests' | 'failures' | 'deadline';

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
}

export async function generateLoad(options: LoadOptions): Promise<LoadOutcome> {
  const url = new URL(options.url);
  const h2 = options.mode === 'h2';
  const connector = new CountingConnector({
    tls: options.tls,
    proxy: options.proxy,
    h2,
    resumeTlsSessions: options.tlsResume,
    timeoutMs: options.timeoutMs,
    policy: options.policy,
  });
  const clients = Array.from(
    { length: options.connections },
    () =>
      new Client(url.origin, {
        // h2: `streams` lanes share each connection. HTTP/1.1: one lane per connection, which sends
        // its next request only when the previous one is answered; allowing a second lets undici
        // write it in that same tick (as wrk and autocannon do) instead of one event-loop turn later.
        pipelining: h2 ? options.streams : 2,
        allowH2: h2,
        ...(h2 ? { maxConcurrentStreams: options.streams } : {}),
        connect: connector.connect,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      }),
  );
  const run = new LoadRun(options, clients, h2 ? options.streams : 1);
  try {
    await run.start();
  } finally {
    await Promise.all(clients.map((client) => client.destroy(RUN_STOPPED).catch(() => {})));
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
  };
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
  readonly dispatchOptions: Dispatcher.DispatchOptions;
  /** Requests that may be sent: the request bound, and in the open loop those due within the duration. */
  readonly limit: number;
  /** Open loop: milliseconds between intended send times; 0 in the closed loop. */
  readonly intervalMs: number;
  private readonly maxFailuresInARow: number;
  readonly altSvc: AltSvcLog | undefined;

  startedAt = 0;
  endedAt = 0;
  /** Next request index a lane may take. */
  next = 0;
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
    private readonly clients: Client[],
    lanesPerClient: number,
  ) {
    const url = new URL(options.url);
    this.altSvc = options.altSvc;
    this.dispatchOptions = {
      path: url.pathname + url.search,
      method: options.method ?? 'GET',
      ...(options.body === undefined ? {} : { body: options.body }),
      headers: options.headers,
      // `new`: Connection: close, so the next request on this connection opens a new one.
      reset: options.mode === 'new',
    };
    this.intervalMs = options.rate === undefined ? 0 : 1000 / options.rate;
    const due = options.rate === undefined ? Infinity : Math.ceil(options.durationMs / this.intervalMs);
    this.limit = Math.min(options.maxRequests ?? Infinity, due);
    this.serviceTime = options.rate === undefined ? undefined : newLatencyHistogram();
    this.maxFailuresInARow = MAX_CONSECUTIVE_FAILURES * clients.length * lanesPerClient;
    for (let i = 0; i < lanesPerClient; i++) for (const client of clients) this.lanes.push(new Lane(this, client));
  }

  start(): Promise<void> {
    const { signal, durationMs, timeoutMs } = this.options;
    const done = new Promise<void>((resolve) => (this.finished = resolve));
    const onAbort = () => this.stop('deadline');
    signal.addEventListener('abort', onAbort, { once: true });
    this.startedAt = performance.now();
    // libuv timers keep millisecond loop time and may fire up to 1 ms early by performance.now();
    // re-arm for what is left so a run never ends before its duration.
    let durationTimer: NodeJS.Timeout;
    const stopWhenDue = () => {
      const left = this.startedAt + durationMs - performance.now();
      if (left > 0) durationTimer = setTimeout(stopWhenDue, Math.ceil(left));
      else this.stop('duration');
    };
    durationTimer = setTimeout(stopWhenDue, durationMs);
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
    for (const client of this.clients) void client.destroy(RUN_STOPPED).catch(() => {});
  }

  /** Takes the next request index, or -1 when the run is over. */
  take(): number {
    if (this.stoppedBy !== undefined) return -1;
    if (this.next >= this.limit) {
      if (this.next >= (this.options.maxRequests ?? Infinity)) this.stop('requests');
      return -1;
    }
    return this.next++;
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
    private readonly client: Client,
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

  /** The lane's first response head: an Alt-Svc header in it is noted (one per lane, not per request). */
  noteAltSvc(rawHeaders: Buffer[]): void {
    if (this.altSvcRead) return;
    this.altSvcRead = true;
    for (let i = 0; i + 1 < rawHeaders.length; i += 2)
      if (rawHeaders[i].toString('latin1').toLowerCase() === 'alt-svc')
        this.run.altSvc?.note(rawHeaders[i + 1].toString('latin1'));
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
    this.client.dispatch(run.dispatchOptions, request);
  }

  /** Once per lane, however it ends. */
  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.run.laneDone();
  }
}

/**
 * The dispatch handler of one request. Its first onComplete or onError ends it, and whatever
 * undici reports after that is ignored: undici 7's HTTP/2 client can report an error twice for
 * one request (ERR_HTTP2_INVALID_SESSION, then ERR_HTTP2_ERROR, against a server that does not
 * speak HTTP/2) and never report some requests queued on the broken session at all; those the
 * run cuts itself (`cut`), at `timeoutMs` or when it stops.
 */
class LaneRequest implements Dispatcher.DispatchHandler {
  /** 0 until the response head arrives. */
  status = 0;
  /** Body bytes of this response, against the per-job cap. */
  private bytes = 0;
  private abort: ((err: Error) => void) | undefined;
  private ended = false;

  constructor(
    private readonly lane: Lane,
    /** Open loop: when it was due. */
    readonly dueAt: number,
    readonly sentAt: number,
  ) {}

  /** Ends it now with `err`, whether or not undici ever reports it. */
  cut(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.abort?.(err);
    this.lane.failed(err);
  }

  onConnect(abort: (err: Error) => void): void {
    this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (this.ended) return false;
    this.status = statusCode;
    this.lane.noteAltSvc(rawHeaders);
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
}
