// The `drain` probe: does the client lose connection reuse when it leaves a body unread?
import { z } from 'zod';
import { distinct, requestSampleSchema } from '../common.js';
import { defineProbe, schemeOf, sequential } from './define.js';

/**
 * full: read every body to its end. unread: close it without reading (Go's `defer
 * resp.Body.Close()`). drain: read and discard up to a cap in bytes and time, then close (what
 * Go 1.27's transport does). json: decode one JSON value, stop at its closing bracket, close.
 */
export const DRAIN_MODES = ['full', 'unread', 'drain', 'json'] as const;
export type DrainMode = (typeof DRAIN_MODES)[number];

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
  }),
});
export type DrainSample = z.infer<typeof drainSampleSchema>;

export const drainProbe = defineProbe({
  kind: 'drain',
  summary: 'N sequential requests per body handling (read, unread, capped drain, JSON decoder): connections opened',
  params: z.strictObject({
    /** Requests per mode (the article's benchmark: 100). */
    requests: z.int().min(1).max(10_000).default(100),
    modes: distinct(z.array(z.enum(DRAIN_MODES)).min(1), 'mode').default(['full', 'unread', 'drain']),
    /** Drain at most this many bytes (Go 1.27: 256 KB). */
    drainMaxBytes: z
      .int()
      .min(0)
      .max(64 << 20)
      .default(256 << 10),
    /** Drain for at most this long (Go 1.27: 50 ms). */
    drainMaxMs: z.int().min(0).max(60_000).default(50),
    /** Per-request time bound. */
    timeoutMs: z.int().min(1).max(120_000).default(10_000),
  }),
  variant: z.strictObject({ mode: z.enum(DRAIN_MODES), scheme: z.enum(['http', 'https']) }),
  details: z.strictObject({
    protocol: z.literal('http/1.1'),
    /** The drain caps used (drain mode), else null. */
    drainCap: z.strictObject({ bytes: z.int(), ms: z.int() }).nullable(),
    /** Connections opened because a body was closed early (not counting Connection: close answers). */
    extraConnections: z.int().nonnegative(),
    /** Whether the target also speaks HTTP/2, where an unread body holds no connection. */
    http2: z.strictObject({ checked: z.boolean(), negotiated: z.boolean().nullable(), note: z.string() }),
    samples: z.array(drainSampleSchema),
  }),
  request: () => ({ body: true, checks: 'status and headers', why: 'its bodies are left unread or cut, on purpose' }),
  variants: (params, target) => params.modes.map((mode) => ({ mode, scheme: schemeOf(target.url) })),
  // One more connection on https asks whether the target speaks HTTP/2.
  demands: (params) =>
    sequential({ value: params.requests + 1, param: 'requests', how: `${params.requests} requests + 1` }),
});
