// The `load` probe: how does the target hold up under concurrency?
import { z } from 'zod';
import { distinct, ERROR_CODES, nameSchema } from '../common.js';
import { JOB_LIMITS } from '../limits.js';
import { defineProbe } from './define.js';

/** `reused`: HTTP/1.1 keep-alive connections; `new`: HTTP/1.1, a new connection per request
 * (`Connection: close`); `h2`: HTTP/2 (ALPN on https, prior knowledge on http), `streams`
 * concurrent streams on each connection. */
export const LOAD_MODES = ['reused', 'new', 'h2'] as const;
export type LoadMode = (typeof LOAD_MODES)[number];

/** `closed`: every connection (or stream) sends its next request when the previous one is
 * answered. `open`: requests arrive at a constant rate whether or not earlier ones are answered. */
export const LOAD_LOOPS = ['closed', 'open'] as const;

export const loadParamsSchema = z.strictObject({
  /** Connections to the target (HTTP/1.1: one request in flight on each). */
  connections: z.int().min(1).max(1000).default(10),
  /** `h2` only: concurrent streams per connection. */
  streams: z.int().min(1).max(1000).default(10),
  /** How long to send requests; the job's time bound still applies. */
  durationSeconds: z.number().min(0.1).max(600).default(10),
  /** Stop after this many requests, if that comes before the end of the duration. */
  requests: z.int().min(1).max(JOB_LIMITS.requests).optional(),
  /** Open loop: requests per second, sent on schedule whatever the answers do; latency counts
   * from each request's intended send time (coordinated omission corrected). Closed loop when absent. */
  rate: z.number().min(0.1).max(100_000).optional(),
  modes: distinct(z.array(z.enum(LOAD_MODES)).min(1), 'mode').default(['reused']),
  /** Per-request time bound (connect, headers, and gaps between body chunks). */
  timeoutMs: z.int().min(1).max(120_000).default(10_000),
  /** Offer the previous TLS session on each new connection (resumed handshakes). */
  tlsResume: z.boolean().default(false),
});
export type LoadParams = z.output<typeof loadParamsSchema>;

/** Latency percentiles in milliseconds, read from an HDR histogram (3 significant digits). */
export const latencyPercentilesSchema = z.strictObject({
  p50: z.number().nonnegative(),
  p90: z.number().nonnegative(),
  p99: z.number().nonnegative(),
  p999: z.number().nonnegative(),
  max: z.number().nonnegative(),
  mean: z.number().nonnegative(),
  /** Values recorded. */
  n: z.int().nonnegative(),
});
export type LatencyPercentiles = z.infer<typeof latencyPercentilesSchema>;

/** An HdrHistogram in its standard compressed V2 encoding (base64), so histograms from many
 * workers and regions can be merged exactly; values are microseconds. */
export const encodedHistogramSchema = z.strictObject({
  encoding: z.literal('hdr-v2-compressed-base64'),
  unit: z.literal('us'),
  data: z.string().max(4_000_000),
});
export type EncodedHistogram = z.infer<typeof encodedHistogramSchema>;

/** Counts of classified transport errors, by code. */
const errorCountsSchema = z.partialRecord(z.enum(ERROR_CODES), z.int().nonnegative());

export const loadDetailsSchema = z.strictObject({
  loop: z.enum(LOAD_LOOPS),
  mode: z.enum(LOAD_MODES),
  connections: z.int().positive(),
  /** Requests in flight at most: connections, times streams for h2. */
  concurrency: z.int().positive(),
  /** Open loop: the arrival rate asked for (requests/s). */
  rate: z.number().positive().optional(),
  /** Open loop: requests whose intended send time fell inside the run. */
  scheduled: z.int().nonnegative().optional(),
  /** Open loop: scheduled requests never sent because the run ended first (the target fell behind). */
  unsent: z.int().nonnegative().optional(),
  /** Requests answered (any status). */
  completed: z.int().nonnegative(),
  /** Requests that failed without an answer, by code. */
  errors: errorCountsSchema,
  /** Answers by status class: "2xx", "4xx", ... */
  statuses: z.record(z.string().regex(/^[1-9]xx$/), z.int().nonnegative()),
  connectionsOpened: z.int().nonnegative(),
  /** Application protocol of the connections opened ("http/1.1", "h2"). */
  protocols: z.record(z.string(), z.int().nonnegative()),
  /** Answered requests per second over the run. */
  requestsPerSecond: z.number().nonnegative(),
  /** Body bytes received. */
  bodyBytes: z.int().nonnegative(),
  /** Why sending stopped. */
  stoppedBy: z.enum(['duration', 'requests', 'failures', 'deadline']),
  /** Answered requests: from intended send time in the open loop, from send time in the closed loop. */
  latencyMs: latencyPercentilesSchema,
  latencyHistogram: encodedHistogramSchema,
  /** Open loop: from the moment each request was actually sent (what an uncorrected tool reports). */
  serviceTimeMs: latencyPercentilesSchema.optional(),
  serviceTimeHistogram: encodedHistogramSchema.optional(),
});
export type LoadDetails = z.infer<typeof loadDetailsSchema>;

export const loadVariantSchema = z.strictObject({
  mode: z.enum(LOAD_MODES),
  loop: z.enum(LOAD_LOOPS),
});

export const loadProbe = defineProbe({
  kind: 'load',
  summary:
    'C connections (closed loop) or R requests/s (open loop) for a duration; HDR latency histograms, throughput, errors',
  params: loadParamsSchema,
  variant: loadVariantSchema,
  details: loadDetailsSchema,
  request: () => ({ body: true, checks: 'status classes', why: 'under load it counts statuses by class (2xx, 5xx)' }),
  variants: (params) =>
    params.modes.map((mode) => ({ mode, loop: params.rate === undefined ? ('closed' as const) : ('open' as const) })),
  demands: (params) => {
    const streams = params.modes.includes('h2') ? params.streams : 1;
    const scheduled = params.rate === undefined ? undefined : Math.ceil(params.rate * params.durationSeconds);
    // A closed loop with no request count sends as fast as the target answers: the worker stops it at the cap.
    const requests =
      params.requests !== undefined && (scheduled === undefined || params.requests <= scheduled)
        ? { value: params.requests, param: 'requests', how: `${params.requests} requests` }
        : scheduled !== undefined
          ? { value: scheduled, param: 'rate', how: `${params.rate} requests/s x ${params.durationSeconds} s` }
          : { value: 0, param: 'requests', how: 'as many as the duration allows, stopped at the cap' };
    return {
      requests,
      concurrency: {
        value: params.connections * streams,
        param: streams > 1 ? 'streams' : 'connections',
        how: `${params.connections} connections x ${streams} streams`,
      },
    };
  },
});

/** One target and variant's load results from every region, merged (histograms added, never
 * percentiles averaged). Part of the run report. */
export const loadTotalSchema = z.strictObject({
  target: nameSchema,
  variant: loadVariantSchema,
  regions: z.array(nameSchema),
  completed: z.int().nonnegative(),
  errors: z.int().nonnegative(),
  connectionsOpened: z.int().nonnegative(),
  /** Sum of the regions' rates: what the target served while they ran at the same time. */
  requestsPerSecond: z.number().nonnegative(),
  latencyMs: latencyPercentilesSchema,
  serviceTimeMs: latencyPercentilesSchema.optional(),
});
export type LoadTotal = z.infer<typeof loadTotalSchema>;
