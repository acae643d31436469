// The `http2` probe: what does HTTP/2 change here?
import { z } from 'zod';
import { probeErrorSchema } from '../common.js';
import { defineProbe, schemeOf } from './define.js';

/** Header bytes of one request on the wire: HTTP/1.1 heads, or HTTP/2 HEADERS (+ CONTINUATION) frames. */
export const headerBytesSchema = z.strictObject({
  request: z.int().nonnegative(),
  response: z.int().nonnegative(),
});

/** How a server met an attempt to speak HTTP/2 without TLS: `http2` (it answered in HTTP/2),
 * `http1` (an HTTP/1.x answer: it ignored the upgrade, or did not take the preface for HTTP/2),
 * `protocol-error` (something else came back: frames that are no answer), `no-answer` (nothing
 * within the bound), `closed` (it closed the connection without a byte), `error` (any other failure). */
export const H2C_OUTCOMES = ['http2', 'http1', 'protocol-error', 'no-answer', 'closed', 'error'] as const;
export type H2cOutcome = (typeof H2C_OUTCOMES)[number];

/** An attempt to speak HTTP/2 without TLS, and what the server actually answered. */
export const h2cAttemptSchema = z.strictObject({
  supported: z.boolean(),
  /** Absent in run files written before probefleet recorded it. */
  outcome: z.enum(H2C_OUTCOMES).optional(),
  /** e.g. "answered HTTP/1.1 200, ignored the upgrade", "protocol error: answered \"HTTP/1.1 400 Bad Request\"". */
  answer: z.string(),
});
export type H2cAttempt = z.infer<typeof h2cAttemptSchema>;

/** N concurrent requests over one protocol, from connecting to the last body byte. */
export const multiplexRunSchema = z.strictObject({
  connectionsOpened: z.int().nonnegative(),
  totalMs: z.number().nonnegative(),
  errors: z.int().nonnegative(),
});
export type MultiplexRun = z.infer<typeof multiplexRunSchema>;

export const HTTP2_STEPS = ['h2-headers', 'h1-headers', 'h2c-upgrade', 'multiplex-h1', 'multiplex-h2'] as const;

export const http2Probe = defineProbe({
  kind: 'http2',
  summary: 'The same target over HTTP/1.1 and HTTP/2: header bytes (HPACK), N concurrent requests, ALPN and h2c',
  question: 'what does HTTP/2 change here?',
  jobs: 'one job per target (`scheme`: `http` or `https`; see [`http2` parameters](probes.md#http2-parameters))',
  findings: {
    H2_NOT_NEGOTIATED: {
      severity: 'warning',
      title: 'HTTP/2 is not negotiated over TLS (ALPN)',
      situation: 'Server does not offer h2 by ALPN, so browsers and clients stay on HTTP/1.1',
      advice: 'Enable HTTP/2 on the server or proxy terminating TLS (ALPN h2 and http/1.1)',
      when: 'https: offered `h2, http/1.1` by ALPN, the server selected `http/1.1` or no protocol at all',
    },
    H2C_UNSUPPORTED: {
      severity: 'info',
      title: 'HTTP/2 without TLS (h2c) is not supported',
      situation: 'Server speaks no h2c: neither prior knowledge nor Upgrade: h2c',
      advice:
        'Fine for browsers (they never use h2c); for service-to-service calls over plain HTTP, enable h2c prior knowledge if you want multiplexing',
      when: 'http: neither prior knowledge nor `Upgrade: h2c` gave HTTP/2, and the server answered something',
    },
    SERVER_NO_ANSWER: {
      severity: 'warning',
      title: 'The server accepts connections but answers nothing',
      situation: 'Server accepts TCP connections and never answers: not HTTP/2, not HTTP/1.1',
      advice:
        'Check what holds the port (a hung process, a full accept backlog, a proxy without an upstream); every client waits out its timeout',
      when: 'http2: prior knowledge and `Upgrade: h2c` got no byte back (timed out or closed) and the HTTP/1.1 request failed too',
    },
    HTTP1_ONLY_MANY_CONNECTIONS: {
      severity: 'info',
      title: 'HTTP/1.1 only: concurrent requests need one connection each',
      situation: 'Server speaks only HTTP/1.1, so concurrent requests open several connections where HTTP/2 needs one',
      advice:
        'Offer HTTP/2 so concurrent requests share one connection (one handshake); meanwhile keep HTTP/1.1 connections alive and pooled',
      when: 'the target speaks no HTTP/2, and the concurrent requests needed more than one HTTP/1.1 connection',
    },
  },
  params: z.strictObject({
    /** HTTP/2 requests after the first on one connection, to see HPACK's dynamic table at work. */
    repeats: z.int().min(1).max(100).default(5),
    /** Concurrent requests: over one HTTP/2 connection, and over HTTP/1.1 with `h1Connections`. */
    concurrent: z.int().min(1).max(100).default(24),
    /** Most HTTP/1.1 connections for the concurrent requests (browsers use 6 per host). */
    h1Connections: z.int().min(1).max(32).default(6),
    /** Bound on every connection and every request attempt. */
    timeoutMs: z.int().min(1).max(120_000).default(10_000),
  }),
  variant: z.strictObject({
    scheme: z.enum(['http', 'https']),
  }),
  details: z.strictObject({
    /** https: what the server selected from `h2, http/1.1` (null: no ALPN at all). Null for http targets. */
    alpn: z.strictObject({ offered: z.array(z.string()), selected: z.string().nullable() }).nullable(),
    /** The request's HTTP/1.1 head and the response's, status line to blank line; the same on every request. */
    h1HeaderBytes: headerBytesSchema.nullable(),
    /** The first request on a new HTTP/2 connection (HPACK tables empty). */
    h2HeaderBytesFirst: headerBytesSchema.nullable(),
    /** The median of the repeated requests on that connection. */
    h2HeaderBytesRepeat: headerBytesSchema.nullable(),
    /** Every HTTP/2 request of that connection: the first, then the repeats. */
    h2Requests: z.array(headerBytesSchema.extend({ seq: z.int().nonnegative(), status: z.int() })),
    /** http targets only: `http2.connect('http://…')` straight away. */
    h2cPriorKnowledge: h2cAttemptSchema.nullable(),
    /** http targets only: an HTTP/1.1 request with `Upgrade: h2c`. */
    h2cUpgrade: h2cAttemptSchema.nullable(),
    multiplexing: z.strictObject({
      requests: z.int().positive(),
      /** At most `h1Connections` connections. */
      h1: multiplexRunSchema.nullable(),
      /** One connection; null when the target speaks no HTTP/2. */
      h2: multiplexRunSchema.nullable(),
    }),
    /** Steps that failed (negotiation answers are results, not failures). */
    errors: z.array(probeErrorSchema.extend({ step: z.enum(HTTP2_STEPS) })),
  }),
  request: () => ({
    body: true,
    checks: 'status',
    why: 'it reads response heads off the wire (its h2c Upgrade attempt stays a GET)',
  }),
  variants: (_params, target) => [{ scheme: schemeOf(target.url) }],
  // One HTTP/1.1 and 1 + repeats HTTP/2 requests, the h2c attempts, then `concurrent` requests over each protocol.
  demands: (params) => ({
    requests: {
      value: 4 + params.repeats + 2 * params.concurrent,
      param: 'concurrent',
      how: `4 + ${params.repeats} repeats + 2 x ${params.concurrent} concurrent`,
    },
    concurrency: { value: params.concurrent, param: 'concurrent', how: `${params.concurrent} concurrent` },
  }),
});
