// The `load` probe: how does the target hold up under concurrency?
import { z } from 'zod';
import { distinct, ERROR_CODES, nameSchema, probeErrorSchema } from '../common.js';
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

/** The least open-loop rate, requests per second: also each worker's share of a spread one. */
const MIN_RATE = 0.1;

/** How long the shards of a load spread over several workers wait for each other, when the plan does not say. */
export const DEFAULT_JOIN_SECONDS = 30;

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
  rate: z.number().min(MIN_RATE).max(100_000).optional(),
  modes: distinct(z.array(z.enum(LOAD_MODES)).min(1), 'mode').default(['reused']),
  /** Per-request time bound (connect, headers, and gaps between body chunks). */
  timeoutMs: z.int().min(1).max(120_000).default(10_000),
  /** Offer the previous TLS session on each new connection (resumed handshakes). */
  tlsResume: z.boolean().default(false),
  /** Threads of the worker sending the load, each with its share of the connections (at most
   * one per connection): `auto` is one per core the worker may use. `auto` when absent (absent
   * rather than a default, so that the ids of existing plans' jobs stay). */
  threads: z.union([z.int().min(1).max(64), z.literal('auto')]).optional(),
  /** Workers of each region the load is spread over, as k6-operator's `parallelism` spreads a
   * test: `connections`, `rate` and `requests` are the whole load's, shared out among the workers
   * (where they do not divide evenly, the first ones take one more); each runs for the whole
   * duration. The workers start together and their histograms are merged into one result.
   * 1 when absent (absent rather than a default, so that the ids of existing plans' jobs stay). */
  workers: z.int().min(1).max(JOB_LIMITS.shards).optional(),
  /** `workers` > 1: how long the shards wait, from the first one taken, for workers of the region
   * to take all of them; then they fail (SHARDS_NOT_TOGETHER). 30 when absent. */
  joinSeconds: z.number().min(1).max(600).optional(),
});
export type LoadParams = z.output<typeof loadParamsSchema>;

/** Shard `index` of `count`'s part of `total`: the first `total % count` shards take one more. */
const portion = (total: number, index: number, count: number) =>
  Math.floor(total / count) + (index < total % count ? 1 : 0);

/** What one of `count` workers runs of a load: the plan's parameters with its share of the
 * connections, the rate and the request count, and no `workers` (it is one worker's job). */
function shareOf(params: LoadParams, index: number, count: number): LoadParams {
  const share: LoadParams = { ...params, connections: portion(params.connections, index, count) };
  delete share.workers;
  delete share.joinSeconds;
  if (params.requests !== undefined) share.requests = portion(params.requests, index, count);
  if (params.rate !== undefined) share.rate = params.rate / count;
  return share;
}

/** Why a load cannot be spread over its `workers`: each needs a connection, a request and the least rate. */
function shardProblems(params: LoadParams): { param: string; message: string }[] {
  const workers = params.workers ?? 1;
  if (workers === 1) return [];
  const each = (what: string, value: number, needs: string) =>
    `${workers} workers share ${what} ${value}: each needs ${needs} (give ${what} ${workers} or more, or fewer workers)`;
  return [
    ...(params.connections < workers
      ? [{ param: 'workers', message: each('connections', params.connections, 'a connection') }]
      : []),
    ...(params.requests !== undefined && params.requests < workers
      ? [{ param: 'workers', message: each('requests', params.requests, 'a request') }]
      : []),
    ...(params.rate !== undefined && params.rate / workers < MIN_RATE
      ? [
          {
            param: 'workers',
            message: `${workers} workers share rate ${params.rate}: each needs ${MIN_RATE} requests/s at least (give a higher rate, or fewer workers)`,
          },
        ]
      : []),
  ];
}

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

/** A thread sending the load whose event loop was busy this share of the run or more sent
 * requests as fast as it could: the client set the pace (LOAD_CLIENT_SATURATED). */
export const SATURATED_UTILIZATION = 0.9;

/** The load generator itself while it ran: a client at its limit, not the target, set the pace. */
export const loadClientSchema = z.strictObject({
  /** Threads that sent the load. */
  threads: z.int().positive(),
  /** Cores the worker may use. */
  cores: z.int().positive(),
  /** Per thread, the share of the run its event loop was busy (0..1). */
  eventLoopUtilization: z.array(z.number().min(0).max(1)).min(1),
  /** CPU time of the worker's process over the run, every thread. */
  cpuSeconds: z.number().nonnegative(),
});
export type LoadClient = z.infer<typeof loadClientSchema>;

/** Why sending stopped, in the order one part's reason wins for a load run in parts (threads,
 * workers): a deadline or failures anywhere say most, and a part that ran out its duration says
 * the request bound was not all sent. */
export const LOAD_STOP_REASONS = ['deadline', 'failures', 'duration', 'requests'] as const;
export type LoadStopReason = (typeof LOAD_STOP_REASONS)[number];

/** The reason that says most about a load run whose parts stopped for these reasons. */
export function weightiestStop(reasons: readonly LoadStopReason[]): LoadStopReason {
  return LOAD_STOP_REASONS.find((reason) => reasons.includes(reason)) ?? 'duration';
}

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
  stoppedBy: z.enum(LOAD_STOP_REASONS),
  /** Answered requests: from intended send time in the open loop, from send time in the closed loop. */
  latencyMs: latencyPercentilesSchema,
  latencyHistogram: encodedHistogramSchema,
  /** Open loop: from the moment each request was actually sent (what an uncorrected tool reports). */
  serviceTimeMs: latencyPercentilesSchema.optional(),
  serviceTimeHistogram: encodedHistogramSchema.optional(),
  client: loadClientSchema,
  /** A load spread over several workers (`workers`): each worker's part as it measured it; the
   * figures above are theirs together (counts added, histograms merged, the rate over the time
   * from the first start to the last end). Absent: one worker ran it. */
  shards: z
    .array(
      z.strictObject({
        index: z.int().nonnegative(),
        worker: z.strictObject({ host: z.string(), pid: z.int() }),
        startedAt: z.iso.datetime(),
        /** How long after the first shard this one started, ms: how together they ran. */
        startOffsetMs: z.number().nonnegative(),
        connections: z.int().nonnegative(),
        completed: z.int().nonnegative(),
        errors: z.int().nonnegative(),
        requestsPerSecond: z.number().nonnegative(),
        latencyMs: latencyPercentilesSchema,
        /** Why this shard measured nothing, or not what it was asked to; absent when it did. */
        error: probeErrorSchema.optional(),
      }),
    )
    .min(1)
    .max(JOB_LIMITS.shards)
    .optional(),
});
export type LoadDetails = z.infer<typeof loadDetailsSchema>;
export type LoadShard = NonNullable<LoadDetails['shards']>[number];

export const loadVariantSchema = z.strictObject({
  mode: z.enum(LOAD_MODES),
  loop: z.enum(LOAD_LOOPS),
});

export const loadProbe = defineProbe({
  kind: 'load',
  summary:
    'C connections (closed loop) or R requests/s (open loop) for a duration; HDR latency histograms, throughput, errors',
  question: 'how does the target hold up under concurrency?',
  jobs: '`reused`: HTTP/1.1 keep-alive connections; `new`: HTTP/1.1, a new connection per request; `h2`: HTTP/2 streams over each connection (see [The load probe](probes.md#the-load-probe))',
  params: loadParamsSchema,
  variant: loadVariantSchema,
  details: loadDetailsSchema,
  request: () => ({ body: true, checks: 'status classes', why: 'under load it counts statuses by class (2xx, 5xx)' }),
  findings: {
    LOAD_CLIENT_SATURATED: {
      severity: 'warning',
      title: 'The load generator, not the target, set the pace',
      situation: 'A thread sending the load was busy (nearly) all the run',
      advice:
        "These latencies include the client's own queueing: add threads (up to the worker's cores) or workers, or lower the rate",
      when: 'load: an event loop sending the load was busy at least 90% of the run',
    },
  },
  variants: (params) =>
    params.modes.map((mode) => ({ mode, loop: params.rate === undefined ? ('closed' as const) : ('open' as const) })),
  shards: {
    of: (params) => ({ count: params.workers ?? 1, joinSeconds: params.joinSeconds ?? DEFAULT_JOIN_SECONDS }),
    share: shareOf,
    problems: shardProblems,
  },
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
