// One undici Client (one connection at a time, so reuse is measured, not guessed) whose
// requests come back as RequestSamples with per-phase times.
import { performance } from 'node:perf_hooks';
import { Client, errors, type Dispatcher } from 'undici';
import type { PhaseTimes, ProbeError, RequestSample } from '../../contracts/common.js';
import type { JobTarget } from '../../contracts/job.js';
import { JOB_LIMITS } from '../../contracts/limits.js';
import { classifyError } from '../classify-error.js';
import { closeBody } from './body.js';
import type { TargetPolicy } from '../target-policy.js';
import type { AltSvcLog } from './alt-svc.js';
import { TimedConnector, type ConnectionTimeline } from './connector.js';
import { exchangeBound } from './wire.js';

export type ResponseBody = Dispatcher.ResponseData['body'];

export interface TimedClientOptions {
  target: JobTarget;
  /** Per-request bound on the whole exchange, from connecting to the last body byte. */
  timeoutMs: number;
  resumeTlsSessions?: boolean;
  /** Where the client may connect (worker/target-policy.ts). */
  policy: TargetPolicy;
  /** Where every response's Alt-Svc header is noted (the job's). */
  altSvc?: AltSvcLog;
}

/** Status and headers of a response, as the body consumer and the caller see them. */
export interface ResponseHead {
  statusCode: number;
  /** Lower-case names. */
  headers: Dispatcher.ResponseData['headers'];
}

/** What a body consumer reports; `bytes` are the body bytes the client read. */
export interface BodyRead {
  bytes: number;
}

export type BodyConsumer<T extends BodyRead> = (body: ResponseBody, head: ResponseHead) => Promise<T>;

export interface TimedRequestOptions<T extends BodyRead = BodyRead> {
  seq: number;
  /** Default GET. */
  method?: 'GET' | 'HEAD' | 'OPTIONS';
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

export async function readWholeBody(body: ResponseBody): Promise<BodyRead> {
  let bytes = 0;
  for await (const chunk of body) bytes += (chunk as Buffer).length;
  return { bytes };
}

/**
 * Given to `Client.destroy`, which otherwise makes a new error per call whose stack Node formats
 * when it destroys the socket: a tenth of a one-request job's CPU. Made once, its stack is formatted once.
 */
const CLIENT_CLOSED = new errors.ClientDestroyedError();

export class TimedHttpClient {
  private readonly connector: TimedConnector;
  private readonly client: Client;
  private readonly url: URL;
  private readonly hostIsLiteral: boolean;
  /** The target's headers with lower-case names, so a request's own headers replace them rather than doubling them. */
  private readonly targetHeaders: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly altSvc: AltSvcLog | undefined;

  constructor(options: TimedClientOptions) {
    this.altSvc = options.altSvc;
    this.url = new URL(options.target.url);
    this.targetHeaders = Object.fromEntries(
      Object.entries(options.target.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
    );
    this.hostIsLiteral = /^[\d.]+$|^\[/.test(this.url.hostname);
    this.connector = new TimedConnector({
      tls: options.target.tls,
      resumeTlsSessions: options.resumeTlsSessions ?? false,
      alpn: ['http/1.1'],
      timeoutMs: options.timeoutMs,
      policy: options.policy,
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

  async request(opts: TimedRequestOptions): Promise<RequestSample> {
    return (await this.exchange(opts)).sample;
  }

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
        method: opts.method ?? 'GET',
        path: opts.path ?? this.url.pathname + this.url.search,
        headers: { ...this.targetHeaders, ...opts.headers },
        reset: opts.closeAfter ?? false,
        signal: bound.signal,
      });
      const headersAt = performance.now();
      head = { statusCode: response.statusCode, headers: response.headers };
      this.altSvc?.note(response.headers['alt-svc']);
      body = response.body;
      serverClosed = response.headers.connection === 'close';
      const consume = (opts.consumeBody ?? readWholeBody) as BodyConsumer<T>;
      const read = await consume(body, head);
      const end = performance.now();
      const sent = this.connector.lastRequestSent;
      const newConnection = this.connector.connections.length > opened;
      const used = sent && sent.at >= start ? sent : undefined;
      return {
        sample: {
          seq: opts.seq,
          status: head.statusCode,
          newConnection,
          phases: this.phases(start, used, newConnection, headersAt, end),
          bodyBytes: read.bytes,
          serverClosed,
          ...(newConnection && used?.timeline.tls ? { tlsResumed: used.timeline.tls.resumed } : {}),
        },
        head,
        body: read,
        wireBytes: used
          ? this.connector.bytesReadOn(used.timeline) - (used.timeline === previous ? previousBytes : 0)
          : undefined,
      };
    } catch (err) {
      // A body its consumer gave up on would hold the connection; let it go.
      if (body && !body.destroyed) closeBody(body);
      return {
        sample: {
          seq: opts.seq,
          status: head?.statusCode,
          newConnection: this.connector.connections.length > opened,
          phases: { total: performance.now() - start },
          bodyBytes: 0,
          serverClosed,
          error: this.withSizeCapNamed(classifyError(err)),
        },
        head,
      };
    } finally {
      bound.release();
    }
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

  /** Durations from raw timestamps, computed once. */
  private phases(
    start: number,
    sent: { timeline: ConnectionTimeline; at: number } | undefined,
    newConnection: boolean,
    headersAt: number,
    end: number,
  ): PhaseTimes {
    const phases: PhaseTimes = {};
    const secure = this.url.protocol === 'https:';
    const c = sent?.timeline;
    if (newConnection && c?.connected !== undefined) {
      if (c.resolved !== undefined) phases.resolve = c.resolved - c.start;
      phases.connect = c.connected - (c.resolved ?? c.start);
      if (secure && c.secured !== undefined) phases.tls = c.secured - c.connected;
    } else if (!newConnection) {
      // A reused connection skipped these; they cost nothing, which is the point.
      if (!this.hostIsLiteral) phases.resolve = 0;
      phases.connect = 0;
      if (secure) phases.tls = 0;
    }
    if (sent) phases.processing = headersAt - sent.at;
    phases.transfer = end - headersAt;
    phases.total = end - start;
    return phases;
  }

  async close(): Promise<void> {
    await this.client.destroy(CLIENT_CLOSED);
  }
}
