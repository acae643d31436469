// A sequential HTTP/1.1 client over raw connections (TimedConnector's, so they are timed and
// counted like undici's), one connection at a time, that leaves every decision about a body to
// its caller: the reader gets an Http1Body, and a body closed before its end goes to the
// exchange's `onEarlyClose` policy. The connection carries the next request only when the body was then
// complete, nothing followed it and the response did not end the connection. The drain probe's
// Go client policies run on it (worker/probes/drain-clients.ts).
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { RequestSample } from '../../contracts/common.js';
import { classifyError } from '../classify-error.js';
import { Http1Body, http1Framing, type BodyRead, type ResponseHead } from './body.js';
import { TimedConnector, type ConnectionTimeline } from './connector.js';
import { proxyOf } from './proxy.js';
import { http1RequestHead, readHttp1ResponseHead } from './raw-http1.js';
import { ResponseCheck } from './response-checks.js';
import {
  isIpLiteralHost,
  requestPhases,
  saysClose,
  type ConnectionShape,
  type TimedClientOptions,
  type TimedExchange,
} from './timed-client.js';
import { exchangeBound } from './wire.js';

export interface Http1ExchangeOptions<T extends BodyRead> {
  seq: number;
  signal: AbortSignal;
  /** Reads the body as far as it wants, and closes it. */
  consumeBody: (body: Http1Body, head: ResponseHead) => Promise<T>;
  /**
   * What the client does when its reader closed a body before the end and the response did not
   * end the connection: nothing (the connection is lost) or read more of it (a transport's drain).
   */
  onEarlyClose: (body: Http1Body, head: ResponseHead) => Promise<void>;
}

interface Connection {
  socket: Duplex;
  timeline: ConnectionTimeline;
}

/** A connection waiting for the next request, watched so that one the server closed is not taken. */
interface IdleConnection extends Connection {
  take(): void;
}

export class SequentialHttp1Client implements ConnectionShape {
  readonly hostIsLiteral: boolean;
  readonly proxied: boolean;
  readonly secure: boolean;
  private readonly connector: TimedConnector;
  private readonly url: URL;
  private readonly request: Buffer;
  private readonly method: string;
  private readonly check: ResponseCheck;
  private idle: IdleConnection | undefined;

  constructor(private readonly options: TimedClientOptions) {
    const target = options.target;
    this.url = new URL(target.url);
    this.hostIsLiteral = isIpLiteralHost(this.url);
    this.secure = this.url.protocol === 'https:';
    const proxy = proxyOf(target);
    this.proxied = proxy !== undefined;
    this.connector = new TimedConnector({
      tls: target.tls,
      resumeTlsSessions: options.resumeTlsSessions ?? false,
      alpn: ['http/1.1'],
      timeoutMs: options.timeoutMs,
      policy: options.policy,
      proxy,
    });
    this.method = target.method ?? 'GET';
    this.check = new ResponseCheck(target.checks);
    const headers = Object.fromEntries(
      Object.entries(target.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
    );
    const body = target.body === undefined ? undefined : Buffer.from(target.body);
    if (body) headers['content-length'] = String(body.length);
    const head = http1RequestHead(this.method, this.url.pathname + this.url.search, this.url.host, headers);
    this.request = body ? Buffer.concat([head, body]) : head;
  }

  get connections(): readonly ConnectionTimeline[] {
    return this.connector.connections;
  }

  async exchange<T extends BodyRead>(opts: Http1ExchangeOptions<T>): Promise<TimedExchange<T>> {
    const start = performance.now();
    const opened = this.connector.connections.length;
    let connection: Connection | undefined;
    let head: ResponseHead | undefined;
    const bound = exchangeBound(this.options.timeoutMs, opts.signal, () => head !== undefined);
    // Reads under way fail with the bound's reason.
    const cut = () => connection?.socket.destroy(bound.signal.reason);
    bound.signal.addEventListener('abort', cut, { once: true });
    try {
      connection = await this.connection();
      if (bound.signal.aborted) throw bound.signal.reason;
      connection.socket.write(this.request);
      const sent = { timeline: connection.timeline, at: performance.now() };
      const answer = await readHttp1ResponseHead(connection.socket);
      const headersAt = performance.now();
      head = { statusCode: answer.status, headers: answer.headers };
      this.options.altSvc?.note(answer.headers['alt-svc']);
      const body = new Http1Body(
        connection.socket,
        http1Framing(this.method, answer.status, answer.headers),
        answer.rest,
      );
      const read = await opts.consumeBody(body, head);
      const end = performance.now();
      const serverClosed = saysClose(answer.headers.connection);
      const keepsAlive =
        answer.httpVersion === '1.1' ? !serverClosed : /keep-alive/i.test(answer.headers.connection ?? '');
      if (keepsAlive && !body.complete) await opts.onEarlyClose(body, head);
      if (keepsAlive && body.complete && body.excess === 0 && body.framing.kind !== 'close') this.park(connection);
      else connection.socket.destroy();
      const newConnection = this.connector.connections.length > opened;
      const sample: RequestSample = {
        seq: opts.seq,
        status: answer.status,
        newConnection,
        phases: requestPhases(this, { start, sent, newConnection, headersAt, end }),
        bodyBytes: read.bytes,
        serverClosed,
      };
      if (newConnection && connection.timeline.tls) sample.tlsResumed = connection.timeline.tls.resumed;
      const failed = this.check.failure(answer.status, answer.headers, read.checked);
      if (failed) sample.error = failed;
      return { sample, head, body: read };
    } catch (err) {
      connection?.socket.destroy();
      return {
        sample: {
          seq: opts.seq,
          status: head?.statusCode,
          newConnection: this.connector.connections.length > opened,
          phases: { total: performance.now() - start },
          bodyBytes: 0,
          error: classifyError(connection?.timeline.tlsAlert ?? err),
        },
        head,
      };
    } finally {
      bound.signal.removeEventListener('abort', cut);
      bound.release();
    }
  }

  /** The idle connection, else a new one. */
  private async connection(): Promise<Connection> {
    const idle = this.idle;
    if (idle) {
      this.idle = undefined;
      idle.take();
      return idle;
    }
    const socket = await this.connector.open(
      this.url.hostname,
      Number(this.url.port) || (this.secure ? 443 : 80),
      this.secure,
    );
    // Errors reach whoever reads (the head, the body); between reads nobody listens, and an
    // unheard 'error' would end the process.
    socket.on('error', () => {});
    return { socket, timeline: this.connector.connections.at(-1)! };
  }

  /** Keeps the connection for the next request; bytes or a close from the server meanwhile end it. */
  private park(connection: Connection): void {
    const { socket } = connection;
    const lost = () => {
      if (this.idle?.socket === socket) this.idle = undefined;
      socket.destroy();
    };
    socket.on('data', lost);
    socket.once('end', lost);
    socket.once('close', lost);
    socket.resume();
    this.idle = {
      ...connection,
      take() {
        socket.off('data', lost);
        socket.off('end', lost);
        socket.off('close', lost);
        socket.pause();
      },
    };
  }

  close(): void {
    this.idle?.socket.destroy();
    this.idle = undefined;
  }
}
