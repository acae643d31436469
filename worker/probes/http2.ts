// `http2`: what does HTTP/2 change here? One job per target, in five steps:
// 1. the first connection: https offers ALPN h2 + http/1.1 and reads what the server selects;
//    http tries h2c by prior knowledge on it;
// 2. if that gave HTTP/2, one request then `repeats` more on it, counting each request's header
//    bytes from the frames on the wire (HPACK fills its tables on the first);
// 3. the same request as a hand-written HTTP/1.1 head, bytes counted exactly;
// 4. http only: an HTTP/1.1 request with `Upgrade: h2c`, and what the server answered;
// 5. N concurrent requests over HTTP/1.1 (at most `h1Connections` connections) and over one
//    HTTP/2 connection: total time and connections opened.
// Every connection and request is bounded by `timeoutMs`: a server that never answers HTTP/2
// yields an answer ("no answer within ..."), never a hang. Node's traps this avoids
// (docs/development.md, "Traps in our dependencies"): a no-ALPN server hangs an h2 client
// (checked before starting one), h2c needs a hand-written Upgrade, and http2's own
// timeToFirstByte is garbage on Node 20 (unused).
import { setMaxListeners } from 'node:events';
import type http2 from 'node:http2';
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { ProbeError } from '../../contracts/common.js';
import { applyRules } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { JOB_LIMITS } from '../../contracts/limits.js';
import type { H2cAttempt, H2cOutcome, HTTP2_STEPS, MultiplexRun } from '../../contracts/probes/http2.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { encodeFrame, FRAME_TYPE, FrameReader, H2_PREFACE, type Frame } from '../../common/h2-frames.js';
import { median } from '../../common/stats.js';
import { classifyError } from '../classify-error.js';
import { TimedConnector } from '../http/connector.js';
import type { AddressResolver } from '../target-policy.js';
import type { AltSvcLog } from '../http/alt-svc.js';
import { H2WireTap, type HeaderBytes } from '../http/h2-wire-tap.js';
import { h2Request, h2SessionOver } from '../http/h2-session.js';
import { ResponseCheck } from '../http/response-checks.js';
import { proxyOf } from '../http/proxy.js';
import { describeBytes, http1RequestHead, readHttp1ResponseHead } from '../http/raw-http1.js';
import { readWholeBody } from '../http/body.js';
import { bounded, exchangeBound, WireError } from '../http/wire.js';
import { HTTP2_RULES } from './http2-findings.js';
import type { Probe, ProbeOutcome } from './probe.js';

const ALPN_OFFER = ['h2', 'http/1.1'];
/** Sent on both protocols, so the two carry the same request. */
const BASE_HEADERS = { 'user-agent': 'probefleet', accept: '*/*' };
/** Headers HTTP/2 forbids (RFC 9113 §8.2.2) or replaces (`host` is `:authority`); left out of both protocols. */
const CONNECTION_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
]);
/** The settings an `Upgrade: h2c` request carries (RFC 7540 §3.2.1), base64url: ENABLE_PUSH = 0. */
const UPGRADE_SETTINGS = Buffer.from([0x00, 0x02, 0x00, 0x00, 0x00, 0x00]).toString('base64url');

type Step = (typeof HTTP2_STEPS)[number];
type Details = ProbeDetails<'http2'>;

export const runHttp2Probe: Probe<'http2'> = async (job, { signal, addresses, altSvc }) => {
  // Concurrent requests each listen on the signal: give them one of their own, relayed from the job's.
  const local = new AbortController();
  setMaxListeners(job.params.concurrent + 10, local.signal);
  const relay = () => local.abort(signal.reason);
  if (signal.aborted) relay();
  else signal.addEventListener('abort', relay, { once: true });
  try {
    return await new Http2Run(job, local.signal, addresses, altSvc).run();
  } finally {
    signal.removeEventListener('abort', relay);
  }
};

class Http2Run {
  private readonly url: URL;
  private readonly secure: boolean;
  private readonly port: number;
  private readonly path: string;
  private readonly headers: Record<string, string>;
  /** The target's method and body, sent on both protocols. */
  private readonly method: string;
  private readonly body: string | undefined;
  /** The target's checks, on each response's status. */
  private readonly check: ResponseCheck;
  private readonly connectors: TimedConnector[] = [];
  private readonly errors: Details['errors'] = [];
  private requests = 0;
  private failedRequests = 0;

  constructor(
    private readonly job: JobOf<'http2'>,
    private readonly signal: AbortSignal,
    private readonly policy: AddressResolver,
    private readonly altSvc: AltSvcLog,
  ) {
    this.url = new URL(job.target.url);
    this.secure = this.url.protocol === 'https:';
    this.port = Number(this.url.port) || (this.secure ? 443 : 80);
    this.path = this.url.pathname + this.url.search;
    this.method = job.target.method ?? 'GET';
    this.body = job.target.body;
    this.check = new ResponseCheck(job.target.checks);
    this.headers = { ...BASE_HEADERS };
    for (const [name, value] of Object.entries(job.target.headers ?? {})) {
      if (!CONNECTION_HEADERS.has(name.toLowerCase())) this.headers[name.toLowerCase()] = value;
    }
  }

  private get timeoutMs(): number {
    return this.job.params.timeoutMs;
  }

  async run(): Promise<ProbeOutcome<'http2'>> {
    const start = performance.now();
    // 1. The first connection: if it cannot be made, nothing else can be measured.
    const first = this.connector(ALPN_OFFER);
    let socket: net.Socket;
    try {
      socket = await this.open(first);
    } catch (err) {
      const error = classifyError(err);
      return {
        summary: this.summary(start),
        details: null,
        findings: [],
        error: { ...error, message: `first connection: ${error.message}` },
      };
    }
    const selected = this.secure ? first.connections[0].tls?.alpn || null : undefined;

    // 2. HTTP/2 header bytes, on that connection when it speaks HTTP/2.
    let h2: { requests: Details['h2Requests']; priorKnowledge: H2cAttempt | null };
    if (this.secure && selected !== 'h2') {
      // Never start an h2 session on a connection that did not select h2: a no-ALPN server hangs it.
      socket.destroy();
      h2 = { requests: [], priorKnowledge: null };
    } else {
      h2 = await this.h2HeaderBytes(socket);
    }
    const speaksH2 = this.secure ? selected === 'h2' : h2.priorKnowledge?.supported === true;

    // 3-5.
    const h1HeaderBytes = await this.h1HeaderBytes();
    const h2cUpgrade = this.secure ? null : await this.h2cUpgrade();
    const multiplexing = {
      requests: this.job.params.concurrent,
      h1: await this.multiplexH1(),
      h2: speaksH2 ? await this.multiplexH2() : null,
    };

    const details: Details = {
      alpn: this.secure ? { offered: ALPN_OFFER, selected: selected ?? null } : null,
      h1HeaderBytes,
      h2HeaderBytesFirst: h2.requests[0]
        ? { request: h2.requests[0].request, response: h2.requests[0].response }
        : null,
      h2HeaderBytesRepeat: medianHeaderBytes(h2.requests.slice(1)),
      h2Requests: h2.requests,
      h2cPriorKnowledge: h2.priorKnowledge,
      h2cUpgrade,
      multiplexing,
      errors: this.errors,
    };
    const firstError = this.errors[0];
    return {
      summary: this.summary(start),
      details,
      findings: applyRules(
        HTTP2_RULES,
        { details, speaksH2 },
        {
          region: this.job.region,
          target: this.job.target.name,
          probe: this.job.probe,
        },
      ),
      error: firstError ? { code: firstError.code, message: `${firstError.step}: ${firstError.message}` } : null,
    };
  }

  private summary(start: number): ProbeOutcome<'http2'>['summary'] {
    return {
      requests: this.requests,
      errors: this.failedRequests,
      connectionsOpened: this.connectors.reduce((n, c) => n + c.connections.length, 0),
      durationMs: performance.now() - start,
      phases: {},
    };
  }

  private connector(alpn: string[]): TimedConnector {
    const connector = new TimedConnector({
      tls: this.job.target.tls,
      proxy: proxyOf(this.job.target),
      resumeTlsSessions: false,
      alpn,
      timeoutMs: this.timeoutMs,
      policy: this.policy,
    });
    this.connectors.push(connector);
    return connector;
  }

  private async open(connector: TimedConnector): Promise<net.Socket> {
    const socket = await connector.open(this.url.hostname, this.port, this.secure);
    // Failures surface on the requests using the socket; a late reset must not become an uncaught error.
    socket.on('error', () => {});
    return socket;
  }

  /** True once the job's time bound is reached: later steps are skipped, and the first one skipped says why. */
  private deadlineReached(step: Step): boolean {
    if (!this.signal.aborted) return false;
    if (!this.errors.some((e) => e.code === 'DEADLINE_EXCEEDED')) {
      this.errors.push({
        step,
        code: 'DEADLINE_EXCEEDED',
        message: "the job's time bound was reached; this step and the ones after it did not run",
      });
    }
    return true;
  }

  private fail(step: Step, err: unknown): void {
    this.errors.push({ step, ...classifyError(err) });
  }

  /** One HTTP/2 request, counted; its failure is counted by the step, which knows whether it is one. */
  private async get(session: http2.ClientHttp2Session) {
    this.requests++;
    const response = await h2Request(
      session,
      {
        method: this.method,
        path: this.path,
        headers: this.headers,
        ...(this.body === undefined ? {} : { body: this.body }),
      },
      this.timeoutMs,
      this.signal,
    );
    this.altSvc.note(response.altSvc);
    return response;
  }

  /** A response whose status the target's checks refuse is a failed request of its step. */
  private checked(step: Step, status: number): void {
    const failure = this.check.failure(status);
    if (!failure) return;
    this.failedRequests++;
    this.errors.push({ step, ...failure });
  }

  /** The target's body, with its length, for a hand-written HTTP/1.1 request. */
  private get h1Headers(): Record<string, string> {
    return this.body === undefined
      ? this.headers
      : { ...this.headers, 'content-length': String(Buffer.byteLength(this.body)) };
  }

  /** Step 2: the first request and the repeats over one HTTP/2 connection, header bytes from the frames. */
  private async h2HeaderBytes(
    socket: net.Socket,
  ): Promise<{ requests: Details['h2Requests']; priorKnowledge: H2cAttempt | null }> {
    const tap = new H2WireTap(socket);
    const session = h2SessionOver(this.url.origin, tap);
    const requests: Details['h2Requests'] = [];
    let priorKnowledge: H2cAttempt | null = null;
    try {
      for (let seq = 0; seq <= this.job.params.repeats; seq++) {
        let response;
        try {
          response = await this.get(session);
        } catch (err) {
          if (seq === 0 && !this.secure && !this.signal.aborted) {
            // Refused prior knowledge is the answer to "is h2c supported?", not a failure.
            priorKnowledge = this.refusal(err, tap.firstBytesIn);
          } else {
            this.failedRequests++;
            this.fail('h2-headers', err);
          }
          break;
        }
        if (seq === 0 && !this.secure) priorKnowledge = h2cAttempt('http2', `answered HTTP/2 ${response.status}`);
        this.checked('h2-headers', response.status);
        requests.push({ seq, status: response.status, ...tap.headerBytes(response.streamId) });
      }
    } finally {
      session.destroy();
    }
    return { requests, priorKnowledge };
  }

  /** What a server that did not speak HTTP/2 answered instead. */
  private refusal(err: unknown, firstBytes: Buffer): H2cAttempt {
    const text = firstBytes.toString('latin1');
    if (/^HTTP\/\d/.test(text))
      return h2cAttempt('http1', `protocol error: answered ${JSON.stringify(text.split('\r\n')[0])}`);
    const { code, message } = classifyError(err);
    if (code === 'RESPONSE_TIMEOUT') return h2cAttempt('no-answer', `no answer within ${this.timeoutMs} ms`);
    if (firstBytes.length === 0 && (code === 'SOCKET_CLOSED' || code === 'CONNECTION_RESET'))
      return h2cAttempt('closed', 'closed the connection without an answer');
    if (firstBytes.length > 0 && code === 'HTTP2_ERROR')
      return h2cAttempt('protocol-error', `protocol error: answered ${framesOrBytes(firstBytes)}`);
    return h2cAttempt('error', `${code}: ${message}`);
  }

  /** Step 3: one hand-written HTTP/1.1 request; its head and the response's, byte for byte. */
  private async h1HeaderBytes(): Promise<HeaderBytes | null> {
    if (this.deadlineReached('h1-headers')) return null;
    let socket: net.Socket | undefined;
    this.requests++;
    try {
      socket = await this.open(this.connector(['http/1.1']));
      const head = http1RequestHead(this.method, this.path, this.url.host, this.h1Headers);
      socket.write(this.body === undefined ? head : Buffer.concat([head, Buffer.from(this.body)]));
      const answer = await bounded(readHttp1ResponseHead(socket), this.timeoutMs, this.signal, 'HTTP/1.1 request', () =>
        socket?.destroy(),
      );
      this.altSvc.note(answer.headers['alt-svc']);
      this.checked('h1-headers', answer.status);
      return { request: head.length, response: answer.headBytes };
    } catch (err) {
      this.failedRequests++;
      this.fail('h1-headers', err);
      return null;
    } finally {
      socket?.destroy();
    }
  }

  /** Step 4 (http): `Upgrade: h2c`. A 101 counts only if the response then comes as HTTP/2 on stream 1. */
  private async h2cUpgrade(): Promise<H2cAttempt | null> {
    if (this.deadlineReached('h2c-upgrade')) return null;
    let socket: net.Socket;
    this.requests++;
    try {
      socket = await this.open(this.connector([]));
    } catch (err) {
      this.failedRequests++;
      this.fail('h2c-upgrade', err);
      return null;
    }
    const give = () => socket.destroy();
    try {
      socket.write(
        http1RequestHead('GET', this.path, this.url.host, {
          connection: 'Upgrade, HTTP2-Settings',
          upgrade: 'h2c',
          'http2-settings': UPGRADE_SETTINGS,
          ...this.headers,
        }),
      );
      const answer = await bounded(readHttp1ResponseHead(socket), this.timeoutMs, this.signal, 'Upgrade: h2c', give);
      if (answer.status !== 101)
        return h2cAttempt('http1', `answered HTTP/${answer.httpVersion} ${answer.status}, ignored the upgrade`);
      socket.write(Buffer.concat([H2_PREFACE, encodeFrame(FRAME_TYPE.SETTINGS, 0, 0)]));
      const streamOne = await bounded(
        firstFrameOfStreamOne(socket, answer.rest),
        this.timeoutMs,
        this.signal,
        'HTTP/2 after 101',
        give,
      );
      return streamOne.type === FRAME_TYPE.HEADERS
        ? h2cAttempt('http2', 'answered 101 Switching Protocols, then the response as HTTP/2 on stream 1')
        : h2cAttempt(
            'protocol-error',
            `answered 101 Switching Protocols, then ${frameName(streamOne.type)} instead of a response on stream 1`,
          );
    } catch (err) {
      const { code, message } = classifyError(err);
      if (code === 'RESPONSE_TIMEOUT') return h2cAttempt('no-answer', `no answer within ${this.timeoutMs} ms`);
      if (code === 'SOCKET_CLOSED' || code === 'CONNECTION_RESET')
        return h2cAttempt('closed', 'closed the connection without an answer');
      if (code === 'DEADLINE_EXCEEDED') {
        this.fail('h2c-upgrade', err);
        return null;
      }
      return h2cAttempt('error', `${code}: ${message}`);
    } finally {
      socket.destroy();
    }
  }

  /** Step 5a: N concurrent requests over HTTP/1.1, at most `h1Connections` connections (a browser's pool). */
  private async multiplexH1(): Promise<MultiplexRun | null> {
    if (this.deadlineReached('multiplex-h1')) return null;
    const connector = this.connector(['http/1.1']);
    const pool = new Pool(this.url.origin, {
      connections: this.job.params.h1Connections,
      connect: connector.connect,
      maxResponseSize: JOB_LIMITS.responseBytes,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
    const start = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: this.job.params.concurrent }, async () => {
        this.requests++;
        let answered = false;
        const bound = exchangeBound(this.timeoutMs, this.signal, () => answered);
        try {
          const response = await pool.request({
            method: this.method,
            path: this.path,
            headers: this.headers,
            ...(this.body === undefined ? {} : { body: this.body }),
            signal: bound.signal,
          });
          answered = true;
          await readWholeBody(response.body);
          return this.check.failure(response.statusCode) ?? null;
        } catch (err) {
          return err;
        } finally {
          bound.release();
        }
      }),
    );
    const totalMs = performance.now() - start;
    await pool.destroy();
    return this.multiplexRun('multiplex-h1', connector, totalMs, outcomes);
  }

  /** Step 5b: the same N requests over one new HTTP/2 connection. */
  private async multiplexH2(): Promise<MultiplexRun | null> {
    if (this.deadlineReached('multiplex-h2')) return null;
    const connector = this.connector(['h2']);
    const start = performance.now();
    let session: http2.ClientHttp2Session | undefined;
    let outcomes: unknown[];
    try {
      const socket = await this.open(connector);
      if (this.secure && connector.connections[0].tls?.alpn !== 'h2') {
        socket.destroy();
        throw new WireError('the server did not select h2 on this connection', 'EWIRE_MALFORMED');
      }
      const open = h2SessionOver(this.url.origin, socket);
      session = open;
      outcomes = await Promise.all(
        Array.from({ length: this.job.params.concurrent }, () =>
          this.get(open).then(
            (response) => this.check.failure(response.status) ?? null,
            (err: unknown) => err,
          ),
        ),
      );
    } catch (err) {
      // No connection, no requests: all of them failed.
      this.requests += this.job.params.concurrent;
      outcomes = Array.from({ length: this.job.params.concurrent }, () => err);
    } finally {
      session?.destroy();
    }
    return this.multiplexRun('multiplex-h2', connector, performance.now() - start, outcomes);
  }

  private multiplexRun(step: Step, connector: TimedConnector, totalMs: number, outcomes: unknown[]): MultiplexRun {
    const failures = outcomes.filter((o) => o !== null);
    this.failedRequests += failures.length;
    const [first] = failures;
    // A response the checks refused is already a ProbeError; anything else was thrown.
    if (failures.length > 0 && isProbeError(first)) this.errors.push({ step, ...first });
    else if (failures.length > 0) this.fail(step, first);
    return { connectionsOpened: connector.connections.length, totalMs, errors: failures.length };
  }
}

function h2cAttempt(outcome: H2cOutcome, answer: string): H2cAttempt {
  return { supported: outcome === 'http2', outcome, answer };
}

function isProbeError(value: unknown): value is ProbeError {
  return (
    !(value instanceof Error) && typeof value === 'object' && value !== null && 'code' in value && 'message' in value
  );
}

/** After a 101: the first frame about stream 1 (HEADERS when the server answers, RST_STREAM or GOAWAY when not). */
function firstFrameOfStreamOne(socket: net.Socket, alreadyRead: Buffer): Promise<Frame> {
  return new Promise((resolve, reject) => {
    const onClose = () => reject(new WireError('connection closed after 101 Switching Protocols', 'EWIRE_CLOSED'));
    const reader = new FrameReader((frame) => {
      if (frame.streamId === 1 || frame.type === FRAME_TYPE.GOAWAY) {
        socket.off('data', onData);
        socket.off('close', onClose);
        resolve(frame);
      }
    });
    const onData = (chunk: Buffer) => reader.feed(chunk);
    socket.on('data', onData);
    socket.once('close', onClose);
    reader.feed(alreadyRead);
    socket.resume();
  });
}

/** What a server answered, as the HTTP/2 frames it holds when it holds whole frames ("SETTINGS, PUSH_PROMISE on stream 1, ..."), else as bytes. */
function framesOrBytes(bytes: Buffer): string {
  const frames: string[] = [];
  new FrameReader((f) => {
    const name = Object.entries(FRAME_TYPE).find(([, t]) => t === f.type)?.[0] ?? `type ${f.type}`;
    frames.push(f.streamId ? `${name} on stream ${f.streamId}` : name);
  }).feed(bytes);
  return frames.length > 0 ? `HTTP/2 frames ${frames.join(', ')} (${bytes.length} bytes)` : describeBytes(bytes);
}

function frameName(type: number): string {
  const name = Object.entries(FRAME_TYPE).find(([, t]) => t === type)?.[0];
  return name ? `a ${name} frame` : `a frame of type ${type}`;
}

function medianHeaderBytes(requests: HeaderBytes[]): HeaderBytes | null {
  if (requests.length === 0) return null;
  return {
    request: Math.round(median(requests.map((r) => r.request))),
    response: Math.round(median(requests.map((r) => r.response))),
  };
}
