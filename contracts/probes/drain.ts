// The `drain` probe: does the client lose connection reuse when it leaves a body unread?
import { z } from 'zod';
import { distinct, requestSampleSchema } from '../common.js';
import { defineProbe, schemeOf, sequential } from './define.js';

/**
 * What the program does with each body. full: read it to its end. unread: close it without
 * reading (Go's `defer resp.Body.Close()`). drain: read and discard up to a cap in bytes and time,
 * then close (the pre-1.27 workaround, what Go 1.27's transport does itself). json: decode one
 * JSON value, stop at its closing bracket, close.
 */
export const DRAIN_MODES = ['full', 'unread', 'drain', 'json'] as const;
export type DrainMode = (typeof DRAIN_MODES)[number];

/**
 * The HTTP client, by what it does with a body the program closed before its end (verified
 * against the real client: docs/probes.md). go-before-1.27: drops the connection (a response
 * with no body, Content-Length: 0, keeps it). go-1.27: drains the rest within the drain caps
 * (Go's: 256 KiB / 50 ms), skipped on Connection: close, and keeps the connection if the drain
 * reached the end. undici: undici itself, which completes a response it has buffered whole.
 */
export const DRAIN_CLIENTS = ['go-before-1.27', 'go-1.27', 'undici'] as const;
export type DrainClientName = (typeof DRAIN_CLIENTS)[number];

/** What happened to one body. */
export const BODY_OUTCOMES = [
  /** The client read it to its end. */
  'read-to-end',
  /** Closed before its end: unread, a JSON decoder done early, or a drain over its cap. */
  'closed-early',
  /** Closed unread because the response said Connection: close (draining cannot save it). */
  'skipped-connection-close',
] as const;

export const drainSampleSchema = requestSampleSchema.extend({
  body: z.strictObject({
    outcome: z.enum(BODY_OUTCOMES),
    /** Why a drain stopped early: the body was over the byte cap, or still coming at the time cap. */
    capHit: z.enum(['bytes', 'time']).optional(),
    contentLength: z.int().nonnegative().optional(),
    /** Time spent draining (drain mode only). */
    drainMs: z.number().nonnegative().optional(),
    /** The go-1.27 client's own drain of a body closed before its end. */
    clientDrain: z
      .strictObject({
        /** Body bytes it read. */
        bytes: z.int().nonnegative(),
        /** It reached the body's end, so the connection carried on. */
        complete: z.boolean(),
        capHit: z.enum(['bytes', 'time']).optional(),
        drainMs: z.number().nonnegative(),
      })
      .optional(),
  }),
});
export type DrainSample = z.infer<typeof drainSampleSchema>;

export const drainProbe = defineProbe({
  kind: 'drain',
  summary:
    'N sequential requests per body handling (read, unread, capped drain, JSON decoder) and HTTP client (Go before 1.27, Go 1.27, undici): connections opened',
  question: 'does the client lose connection reuse when it leaves a body unread?',
  jobs: 'one per mode and client. Modes: `full`: read every body; `unread`: close it unread; `drain`: read and discard at most `drainMaxBytes` (256 KiB) for at most `drainMaxMs` (50 ms), then close; `json`: decode one JSON value and close at its closing bracket. Clients: `go-before-1.27`: a body closed before its end costs the connection; `go-1.27`: the client drains it within the same caps; `undici`: undici itself',
  findings: {
    UNREAD_BODY_BREAKS_REUSE: {
      severity: 'warning',
      title: 'Response bodies closed before their end cost a new connection each',
      situation: 'An HTTP/1.1 client closes response bodies without reading them to the end',
      advice:
        'Read bodies to the end, or drain them within a cap (256 KB / 50 ms) before closing, or use a client that drains them itself (Go 1.27); skip the drain on Connection: close; HTTP/2 needs none',
      when: 'in `unread`, `drain` or `json` mode, with any client, 10% or more of the requests opened a connection because the previous body was closed before its end (Connection: close answers not counted); the evidence names the client',
    },
  },
  params: z.strictObject({
    /** Requests per mode (the article's benchmark: 100). */
    requests: z.int().min(1).max(10_000).default(100),
    modes: distinct(z.array(z.enum(DRAIN_MODES)).min(1), 'mode').default(['full', 'unread', 'drain']),
    /** The HTTP clients whose handling of a body closed early is measured, each mode with each. */
    clients: distinct(z.array(z.enum(DRAIN_CLIENTS)).min(1), 'client').default([...DRAIN_CLIENTS]),
    /** Drain at most this many bytes: the drain mode's and the go-1.27 client's (Go 1.27: 256 KB). */
    drainMaxBytes: z
      .int()
      .min(0)
      .max(64 << 20)
      .default(256 << 10),
    /** Drain for at most this long: the drain mode's and the go-1.27 client's (Go 1.27: 50 ms). */
    drainMaxMs: z.int().min(0).max(60_000).default(50),
    /** Per-request time bound. */
    timeoutMs: z.int().min(1).max(120_000).default(10_000),
  }),
  variant: z.strictObject({
    mode: z.enum(DRAIN_MODES),
    client: z.enum(DRAIN_CLIENTS),
    scheme: z.enum(['http', 'https']),
  }),
  details: z.strictObject({
    protocol: z.literal('http/1.1'),
    /** The drain caps used (drain mode, or the go-1.27 client), else null. */
    drainCap: z.strictObject({ bytes: z.int(), ms: z.int() }).nullable(),
    /** Connections opened because a body was closed early (not counting Connection: close answers). */
    extraConnections: z.int().nonnegative(),
    /** Whether the target also speaks HTTP/2, where an unread body holds no connection. */
    http2: z.strictObject({ checked: z.boolean(), negotiated: z.boolean().nullable(), note: z.string() }),
    samples: z.array(drainSampleSchema),
  }),
  request: () => ({ body: true, checks: 'status and headers', why: 'its bodies are left unread or cut, on purpose' }),
  variants: (params, target) =>
    params.modes.flatMap((mode) => params.clients.map((client) => ({ mode, client, scheme: schemeOf(target.url) }))),
  // One more connection on https asks whether the target speaks HTTP/2.
  demands: (params) =>
    sequential({ value: params.requests + 1, param: 'requests', how: `${params.requests} requests + 1` }),
});
