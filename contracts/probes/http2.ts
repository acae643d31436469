// The `http2` probe: what does HTTP/2 change here?
import { z } from 'zod';
import { probeErrorSchema } from '../common.js';
import { defineProbe, schemeOf } from './define.js';

/** Header bytes of one request on the wire: HTTP/1.1 heads, or HTTP/2 HEADERS (+ CONTINUATION) frames. */
export const headerBytesSchema = z.strictObject({
  request: z.int().nonnegative(),
  response: z.int().nonnegative(),
});

/** An attempt to speak HTTP/2 without TLS, and what the server actually answered. */
export const h2cAttemptSchema = z.strictObject({
  supported: z.boolean(),
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
