// One undici Client (one connection at a time, so reuse is measured, not guessed) whose
// requests come back as RequestSamples with per-phase times.
import { performance } from 'node:perf_hooks';
import { Client, type Dispatcher } from 'undici';
import type { PhaseTimes, RequestSample } from '../../contracts/common.js';
import type { JobTarget } from '../../contracts/job.js';
import { classifyError } from '../classify-error.js';
import { TimedConnector, type ConnectionTimeline } from './connector.js';

export type ResponseBody = Dispatcher.ResponseData['body'];

export interface TimedClientOptions {
  target: JobTarget;
  /** Per-request bound: connect, headers, and gaps between body chunks. */
  timeoutMs: number;
  resumeTlsSessions?: boolean;
}

export interface TimedRequestOptions {
  seq: number;
  /** Ask the server to close after this response (`Connection: close`), forcing a new connection next time. */
  closeAfter?: boolean;
  signal?: AbortSignal;
  /** Reads (or deliberately does not read) the body; returns the bytes read. Default: read it all. */
  consumeBody?: (body: ResponseBody) => Promise<number>;
}

export async function readWholeBody(body: ResponseBody): Promise<number> {
  let bytes = 0;
  for await (const chunk of body) bytes += (chunk as Buffer).length;
  return bytes;
}

export class TimedHttpClient {
  private readonly connector: TimedConnector;
  private readonly client: Client;
  private readonly url: URL;
  private readonly hostIsLiteral: boolean;

  constructor(private readonly options: TimedClientOptions) {
    this.url = new URL(options.target.url);
    this.hostIsLiteral = /^[\d.]+$|^\[/.test(this.url.hostname);
    this.connector = new TimedConnector({
      tls: options.target.tls,
      resumeTlsSessions: options.resumeTlsSessions ?? false,
      alpn: ['http/1.1'],
      timeoutMs: options.timeoutMs,
    });
    this.client = new Client(this.url.origin, {
      connect: this.connector.connect,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 60_000,
    });
  }

  get connections(): readonly ConnectionTimeline[] {
    return this.connector.connections;
  }

  async request(opts: TimedRequestOptions): Promise<RequestSample> {
    const opened = this.connector.connections.length;
    const start = performance.now();
    let status: number | undefined;
    let serverClosed: boolean | undefined;
    try {
      const response = await this.client.request({
        method: 'GET',
        path: this.url.pathname + this.url.search,
        headers: this.options.target.headers,
        reset: opts.closeAfter ?? false,
        signal: opts.signal,
      });
      const headersAt = performance.now();
      status = response.statusCode;
      serverClosed = response.headers.connection === 'close';
      const bodyBytes = await (opts.consumeBody ?? readWholeBody)(response.body);
      const end = performance.now();
      const sent = this.connector.lastRequestSent;
      const newConnection = this.connector.connections.length > opened;
      return {
        seq: opts.seq,
        status,
        newConnection,
        phases: this.phases(start, sent && sent.at >= start ? sent : undefined, newConnection, headersAt, end),
        bodyBytes,
        serverClosed,
      };
    } catch (err) {
      return {
        seq: opts.seq,
        status,
        newConnection: this.connector.connections.length > opened,
        phases: { total: performance.now() - start },
        bodyBytes: 0,
        serverClosed,
        error: classifyError(err),
      };
    }
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
    await this.client.destroy();
  }
}
