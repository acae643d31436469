// Metric and label names, in one place for the processes that export them and for the
// dashboards and alert rules that read them. Prometheus conventions: base units, `_seconds`,
// `_total`; labels are bounded (regions, states, outcomes), never run or job ids.

import { PHASES, SEVERITIES } from './common.js';
import { VERDICTS } from './comparison.js';
import { THRESHOLD_QUANTITY_IDS } from './thresholds.js';
import { ACCEPT_ENCODINGS } from './probes/compression.js';
import { DNS_RECORD_TYPES } from './probes/dns.js';
import { DRAIN_CLIENTS } from './probes/drain.js';
import { DNS_CACHES } from './resolver.js';
import { modesOf, type OtherProbe, PROBE_KINDS, type ProbeKind, type RequestSampleProbe } from './probes/index.js';
import { LOAD_LOOPS } from './probes/load.js';
import { TLS_VERSIONS } from './probes/tls.js';

export interface MetricSpec {
  name: string;
  help: string;
  labels: readonly string[];
}

export type MetricType = 'counter' | 'gauge' | 'histogram';

/** A metric with its Prometheus type: what the metric catalogue (dashboards/metric-catalogue.json) lists. */
export interface TypedMetricSpec extends MetricSpec {
  type: MetricType;
  /** Histograms only: upper bounds of the buckets. */
  buckets?: readonly number[];
}

/** Served by `probefleet coordinator` on /metrics. */
export const COORDINATOR_METRICS = {
  queueJobs: {
    name: 'probefleet_queue_jobs',
    help: 'BullMQ jobs (batches of probe jobs) in a region queue, by state (waiting, active, delayed, prioritized, failed)',
    labels: ['region', 'state'],
    type: 'gauge',
  },
  queueWorkers: {
    name: 'probefleet_queue_workers',
    help: 'Workers connected to a region queue',
    labels: ['region'],
    type: 'gauge',
  },
  jobsFinished: {
    name: 'probefleet_run_jobs_total',
    help: 'Jobs of finished runs, by outcome: ok, error (the target failed; a result), failed (no result), not_run',
    labels: ['region', 'outcome'],
    type: 'counter',
  },
  runsFinished: {
    name: 'probefleet_runs_total',
    help: 'Runs turned into stored reports, by outcome: complete (every job has a result) or partial',
    labels: ['outcome'],
    type: 'counter',
  },
  runDuration: {
    name: 'probefleet_run_duration_seconds',
    help: 'Time from a run being submitted to its report',
    labels: [],
    type: 'histogram',
    // Runs take from seconds (a short plan) to hours (many jobs per region).
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600],
  },
  jobsStalled: {
    name: 'probefleet_jobs_stalled_total',
    help: "Times a probe job's worker was lost while running it (killed, hung or cut off from Redis: its batch's lock expired), counted when the job's run finishes",
    labels: ['region'],
    type: 'counter',
  },
  redisUp: {
    name: 'probefleet_redis_up',
    help: "1 when Redis answered the coordinator's last read of the queues (every few seconds), else 0",
    labels: [],
    type: 'gauge',
  },
  redisPersistence: {
    name: 'probefleet_redis_persistence',
    help: 'How Redis keeps its data across a restart, checked at the start: 1 for what was found (aof, rdb, none; unknown when CONFIG GET is refused)',
    labels: ['persistence'],
    type: 'gauge',
  },
} as const satisfies Record<string, TypedMetricSpec>;

/** Values of probefleet_redis_persistence's label. */
export const REDIS_PERSISTENCE = ['aof', 'rdb', 'none', 'unknown'] as const;

/** States of a region queue reported by probefleet_queue_jobs. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;

/** Outcomes of probefleet_run_jobs_total. */
export const JOB_OUTCOMES = ['ok', 'error', 'failed', 'not_run'] as const;

// ---------------------------------------------------------------------------------------------
// Probe measurements, pushed to a Pushgateway. Two kinds of group, so that nothing is
// lost when targets take turns and nothing piles up per run
// (docs/decisions/016-last-run-gauges-and-stable-groups.md):
// - `probes`: each process that runs jobs (a worker, or `run` in embedded mode) keeps one
//   cumulative registry of counters and histograms and pushes it whole (PUT) as jobs finish (at
//   most every few seconds), continuing the counts the group already holds. Rates and
//   distributions over weeks.
// - `run`: whoever finishes a run pushes one group per plan and region with gauges of that
//   run ("one number per region and target"), replacing the previous run's. Alerts and the
//   last-run panels read these, so they hold between nightly runs.

/** Seconds, from 100 µs (a request over loopback) to 10 s (a handshake that times out). */
export const SECONDS_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
] as const;

/** Pushgateway groups: the `job` label and the labels of the grouping key. No run or job ids. */
export const PUSH_GROUPS = {
  probes: { job: 'probefleet', key: ['region', 'instance'] },
  run: { job: 'probefleet_run', key: ['plan', 'region'] },
  /** `probefleet run`'s own push failures (it serves no /metrics), cumulative per instance. */
  cli: { job: 'probefleet_cli', key: ['instance'] },
  compare: { job: 'probefleet_compare', key: ['plan', 'region'] },
} as const;
export type PushGroupKind = keyof typeof PUSH_GROUPS;

/** Per job, cumulative: pushed in the `probes` group. `region` and `instance` come from the group. */
export const PROBE_JOB_METRICS = {
  jobs: {
    name: 'probefleet_probe_jobs_total',
    help: 'Probe jobs run, by outcome: ok, or the error code of a job that could not measure everything',
    labels: ['target', 'probe', 'outcome'],
    type: 'counter',
  },
  lastRun: {
    name: 'probefleet_probe_last_run_timestamp_seconds',
    help: 'When a job of this probe last finished for the target (Unix time)',
    labels: ['target', 'probe'],
    type: 'gauge',
  },
  lastSuccess: {
    name: 'probefleet_probe_last_success_timestamp_seconds',
    help: 'When a job of this probe last finished without error for the target (Unix time)',
    labels: ['target', 'probe'],
    type: 'gauge',
  },
  connectionsOpened: {
    name: 'probefleet_connections_opened_total',
    help: 'Connections the probe opened, counted at the socket layer',
    labels: ['target', 'probe', 'mode', 'client'],
    type: 'counter',
  },
  requests: {
    name: 'probefleet_requests_total',
    help: 'HTTP requests sent by the probe, by status class (1xx-5xx) or error',
    labels: ['target', 'probe', 'mode', 'client', 'code_class'],
    type: 'counter',
  },
  requestPhase: {
    name: 'probefleet_request_phase_seconds',
    help: 'Duration of each phase of a request (resolve, connect, tls, processing, transfer, total), on a new or a reused connection',
    labels: ['target', 'probe', 'mode', 'client', 'connection', 'phase'],
    type: 'histogram',
    buckets: SECONDS_BUCKETS,
  },
  tlsHandshake: {
    name: 'probefleet_tls_handshake_seconds',
    help: 'TLS handshake alone (TCP connected to handshake done), full or resumed, per TLS version',
    labels: ['target', 'tls_version', 'handshake'],
    type: 'histogram',
    buckets: SECONDS_BUCKETS,
  },
  dnsLookup: {
    name: 'probefleet_dns_lookup_seconds',
    help: "DNS lookup of the target's host name per resolver and record type, cold (a query each) or warm (a client cache honouring the TTL: most lookups are cache hits)",
    labels: ['target', 'resolver', 'record_type', 'cache'],
    type: 'histogram',
    buckets: SECONDS_BUCKETS,
  },
} as const satisfies Record<string, TypedMetricSpec>;
export type ProbeJobMetric = keyof typeof PROBE_JOB_METRICS;

/** Per run, one group per plan and region (`plan` and `region` come from the group). */
export const RUN_METRICS = {
  lastRun: {
    name: 'probefleet_last_run_timestamp_seconds',
    help: 'When the last run of the plan with results from this region finished (Unix time)',
    labels: [],
    type: 'gauge',
  },
  lastRunJobs: {
    name: 'probefleet_last_run_jobs',
    help: 'Jobs of the last run in this region, by probe and outcome: ok, error (the target failed), failed (no result), not_run',
    labels: ['probe', 'outcome'],
    type: 'gauge',
  },
  probeSuccess: {
    name: 'probefleet_probe_success',
    help: '1 when every job of the probe for the target succeeded in the last run, else 0',
    labels: ['target', 'probe'],
    type: 'gauge',
  },
  findings: {
    name: 'probefleet_findings',
    help: 'Findings of the last run, by code (contracts/findings.ts); absent when none',
    labels: ['target', 'probe', 'finding', 'severity'],
    type: 'gauge',
  },
  newConnectionCost: {
    name: 'probefleet_new_connection_cost_seconds',
    help: 'New-connection cost in the last run: median(new) - median(reused) per request',
    labels: ['target', 'scheme'],
    type: 'gauge',
  },
  newConnectionCostLower: {
    name: 'probefleet_new_connection_cost_ci95_lower_seconds',
    help: 'Lower bound of the 95% bootstrap interval of the new-connection cost in the last run',
    labels: ['target', 'scheme'],
    type: 'gauge',
  },
  newConnectionCostUpper: {
    name: 'probefleet_new_connection_cost_ci95_upper_seconds',
    help: 'Upper bound of the 95% bootstrap interval of the new-connection cost in the last run',
    labels: ['target', 'scheme'],
    type: 'gauge',
  },
  newConnectionCostTail: {
    name: 'probefleet_new_connection_cost_tail_seconds',
    help: 'New-connection cost in the tail in the last run: p95 and p99 (quantile 0.95, 0.99) of the time new connections took to open (resolve + connect + TLS)',
    labels: ['target', 'scheme', 'quantile'],
    type: 'gauge',
  },
  tlsHandshake: {
    name: 'probefleet_last_run_tls_handshake_seconds',
    help: 'TLS handshake p50, p95 and p99 (quantile 0.5, 0.95, 0.99) in the last run, full or resumed, per TLS version',
    labels: ['target', 'tls_version', 'handshake', 'quantile'],
    type: 'gauge',
  },
  thresholdValue: {
    name: 'probefleet_threshold_value',
    help: "The last run's value of each quantity a threshold of the plan bounds, in base units (seconds, a ratio, bytes, per second); the alerts of probefleet alerts PLAN compare it with the threshold",
    labels: ['threshold', 'quantity', 'target', 'probe', 'variant'],
    type: 'gauge',
  },
  thresholdBreached: {
    name: 'probefleet_threshold_breached',
    help: 'Whether that value breached its threshold in the last run: 1 breached, 0 within',
    labels: ['threshold', 'quantity', 'target', 'probe', 'variant'],
    type: 'gauge',
  },
  certExpiry: {
    name: 'probefleet_tls_cert_expiry_timestamp_seconds',
    help: "When the target's certificate expires (notAfter, Unix time), as seen in the last run",
    labels: ['target'],
    type: 'gauge',
  },
  headerBytes: {
    name: 'probefleet_header_bytes',
    help: 'Header bytes of one request or response on the wire: HTTP/1.1 heads, HTTP/2 HEADERS frames (first request on a connection, or the median repeat)',
    labels: ['target', 'protocol', 'request', 'message'],
    type: 'gauge',
  },
  multiplexDuration: {
    name: 'probefleet_multiplex_seconds',
    help: 'Concurrent requests over a pool of HTTP/1.1 connections or one HTTP/2 connection: time from connecting to the last byte',
    labels: ['target', 'protocol'],
    type: 'gauge',
  },
  multiplexConnections: {
    name: 'probefleet_multiplex_connections',
    help: 'Connections the concurrent requests opened, per protocol',
    labels: ['target', 'protocol'],
    type: 'gauge',
  },
  responseBytes: {
    name: 'probefleet_response_bytes',
    help: 'Bytes of a response per Accept-Encoding asked: wire (everything read from the connection), body (as sent), decoded',
    labels: ['target', 'encoding', 'layer'],
    type: 'gauge',
  },
  decodeDuration: {
    name: 'probefleet_decode_seconds',
    help: 'Median time to decode the response body here, per Accept-Encoding asked',
    labels: ['target', 'encoding'],
    type: 'gauge',
  },
  loadThroughput: {
    name: 'probefleet_load_requests_per_second',
    help: 'Answered requests per second of a load job in the last run',
    labels: ['target', 'mode', 'loop'],
    type: 'gauge',
  },
  loadClientUtilization: {
    name: 'probefleet_load_client_utilization',
    help: "How busy the load generator was over a load job in the last run: its busiest thread's event-loop utilization (0..1; 0.9 or more: the client set the pace, LOAD_CLIENT_SATURATED)",
    labels: ['target', 'mode', 'loop'],
    type: 'gauge',
  },
  loadLatency: {
    name: 'probefleet_load_latency_seconds',
    help: 'Latency percentiles of a load job in the last run (open loop: from the intended send time), from its HDR histogram',
    labels: ['target', 'mode', 'loop', 'quantile'],
    type: 'gauge',
  },
} as const satisfies Record<string, TypedMetricSpec>;
export type RunMetric = keyof typeof RUN_METRICS;

/**
 * A run's targets and their labels, in each region's `run` group, for a plan that declares
 * `targetLabels`: one series per target, `probefleet_target_info{target, team, service} 1`, its
 * labels those of the plan (so unknown until the plan is, unlike every other metric's). Dashboards
 * join on it to group any target's series by a label:
 * `... * on(region, target) group_left(team) max by (region, target, team) (probefleet_target_info)`
 * (docs/decisions/030-target-labels.md). A target without a label has it empty (no label, to Prometheus).
 */
export const TARGET_INFO_METRIC = {
  name: 'probefleet_target_info',
  help: "1 for each target of the plan's last run, with the labels the plan declares (targetLabels) as labels: join on it to group a target's series by them",
  labels: ['target'],
  type: 'gauge',
} as const satisfies TypedMetricSpec;

/**
 * Per comparison of a run with the previous run of its plan (the coordinator makes one for each run
 * it finishes): one group per plan and region, replaced by the next comparison. `plan` and
 * `region` come from the group. Like the run gauges, they hold until the next run.
 */
export const COMPARISON_METRICS = {
  timestamp: {
    name: 'probefleet_comparison_timestamp_seconds',
    help: 'When the last compared run of the plan finished (Unix time)',
    labels: [],
    type: 'gauge',
  },
  verdict: {
    name: 'probefleet_comparison_verdict',
    help: 'Verdict on each quantity of the last run against its baseline (the earlier runs of the plan): 1 for the verdict it got (regressed, improved, unchanged), 0 for the others',
    labels: ['target', 'probe', 'variant', 'quantity', 'verdict'],
    type: 'gauge',
  },
  relativeChange: {
    name: 'probefleet_comparison_relative_change',
    help: 'Change of each quantity of the last run from its baseline median, as a share of that median (0.5: 50% more); absent when it was 0',
    labels: ['target', 'probe', 'variant', 'quantity'],
    type: 'gauge',
  },
} as const satisfies Record<string, TypedMetricSpec>;

/** Served by `probefleet worker --metrics-port` on /metrics (besides prom-client's process metrics). */
export const WORKER_METRICS = {
  jobs: {
    name: 'probefleet_worker_jobs_total',
    help: 'Probe jobs this worker ran, by outcome: completed, failed (its batch retried or failed for good), handed_back (shutdown), lease_lost (cut off from Redis: stopped before another worker could take its batch)',
    labels: ['region', 'outcome'],
    type: 'counter',
  },
  inFlight: {
    name: 'probefleet_worker_jobs_in_flight',
    help: 'Probe jobs this worker is running now',
    labels: ['region'],
    type: 'gauge',
  },
} as const satisfies Record<string, TypedMetricSpec>;

/** Served on /metrics by every process that pushes (worker and coordinator). */
export const PUSH_METRICS = {
  failures: {
    name: 'probefleet_push_failures_total',
    help: 'Pushes to the Pushgateway that failed after every retry (the job or run itself went on)',
    labels: ['group'],
    type: 'counter',
  },
} as const satisfies Record<string, TypedMetricSpec>;

/** Served on /metrics by the processes that wait out Redis's troubles (worker and coordinator). */
export const REDIS_METRICS = {
  errors: {
    name: 'probefleet_redis_errors_total',
    help: 'Errors from Redis, by kind: oom (Redis full: maxmemory reached under policy noeviction, writes refused), readonly (a replica answered a write, as after a failover), connection (lost or refused), other',
    labels: ['kind'],
    type: 'counter',
  },
} as const satisfies Record<string, TypedMetricSpec>;

/** Kinds of probefleet_redis_errors_total (common/redis-errors.ts tells them apart). */
export const REDIS_ERROR_KINDS = ['oom', 'readonly', 'connection', 'other'] as const;

/** Outcomes of probefleet_worker_jobs_total. */
export const WORKER_JOB_OUTCOMES = ['completed', 'failed', 'handed_back', 'lease_lost'] as const;

/**
 * Which metrics each probe's results produce, and with which labels (a subset of the metric's
 * labels: only probes with modes have `mode`). Besides these, every probe's results produce
 * COMMON_PROBE_METRICS. A probe with request samples (RequestSampleProbe) has the request
 * metrics without an entry here (probeMetricsOf); any other probe's missing entry is a compile error.
 */
export interface ProbeMetricLabels {
  job: Partial<Record<ProbeJobMetric, readonly string[]>>;
  run: Partial<Record<RunMetric, readonly string[]>>;
}

/** Produced by every probe's results (findings and thresholds only where a run has them). */
export const COMMON_PROBE_METRICS = {
  job: ['jobs', 'lastRun', 'lastSuccess'],
  run: ['lastRun', 'lastRunJobs', 'probeSuccess', 'findings', 'thresholdValue', 'thresholdBreached'],
} as const satisfies { job: readonly ProbeJobMetric[]; run: readonly RunMetric[] };

const REQUEST_METRICS_WITH_MODE = {
  connectionsOpened: ['target', 'probe', 'mode'],
  requests: ['target', 'probe', 'mode', 'code_class'],
  requestPhase: ['target', 'probe', 'mode', 'connection', 'phase'],
} as const;
const REQUEST_METRICS = {
  connectionsOpened: ['target', 'probe'],
  requests: ['target', 'probe', 'code_class'],
  requestPhase: ['target', 'probe', 'connection', 'phase'],
} as const;

export const PROBE_METRICS: { [K in OtherProbe]: ProbeMetricLabels } & {
  [K in RequestSampleProbe]?: ProbeMetricLabels;
} = {
  reuse: {
    job: REQUEST_METRICS_WITH_MODE,
    run: {
      newConnectionCost: ['target', 'scheme'],
      newConnectionCostLower: ['target', 'scheme'],
      newConnectionCostUpper: ['target', 'scheme'],
      newConnectionCostTail: ['target', 'scheme', 'quantile'],
    },
  },
  compression: {
    job: REQUEST_METRICS,
    run: { responseBytes: ['target', 'encoding', 'layer'], decodeDuration: ['target', 'encoding'] },
  },
  tls: {
    job: { connectionsOpened: ['target', 'probe'], tlsHandshake: ['target', 'tls_version', 'handshake'] },
    run: { tlsHandshake: ['target', 'tls_version', 'handshake', 'quantile'], certExpiry: ['target'] },
  },
  http2: {
    job: { connectionsOpened: ['target', 'probe'] },
    run: {
      headerBytes: ['target', 'protocol', 'request', 'message'],
      multiplexDuration: ['target', 'protocol'],
      multiplexConnections: ['target', 'protocol'],
    },
  },
  load: {
    job: { connectionsOpened: ['target', 'probe', 'mode'], requests: ['target', 'probe', 'mode', 'code_class'] },
    run: {
      loadThroughput: ['target', 'mode', 'loop'],
      loadClientUtilization: ['target', 'mode', 'loop'],
      loadLatency: ['target', 'mode', 'loop', 'quantile'],
    },
  },
  dns: { job: { dnsLookup: ['target', 'resolver', 'record_type', 'cache'] }, run: {} },
  drain: {
    job: {
      connectionsOpened: ['target', 'probe', 'mode', 'client'],
      requests: ['target', 'probe', 'mode', 'client', 'code_class'],
      requestPhase: ['target', 'probe', 'mode', 'client', 'connection', 'phase'],
    },
    run: {},
  },
};

/** The metrics and labels a probe's results produce: its entry, else the request metrics. */
export function probeMetricsOf(kind: ProbeKind): ProbeMetricLabels {
  return (
    (PROBE_METRICS as Partial<Record<ProbeKind, ProbeMetricLabels>>)[kind] ?? {
      job: modesOf(kind).length > 0 ? REQUEST_METRICS_WITH_MODE : REQUEST_METRICS,
      run: {},
    }
  );
}

/** Status classes of probefleet_requests_total; `error` for a request that got no answer. */
export const CODE_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'error'] as const;

/** What a label may hold. Lists are closed sets; a sentence says where an open one comes from. */
export const LABEL_VALUES: Record<string, readonly string[] | string> = {
  region: 'region names from the plan and the workers (a-z, 0-9, "-", "_")',
  instance: 'the process that pushed: --instance, else the host name',
  plan: 'plan names',
  target: 'target names from the plan',
  probe: PROBE_KINDS,
  outcome:
    'probe jobs: ok or an error code (contracts/common.ts); run jobs: ok, error, failed, not_run; worker jobs: completed, failed, handed_back, lease_lost',
  mode: [...new Set(PROBE_KINDS.flatMap(modesOf))],
  client: DRAIN_CLIENTS,
  loop: LOAD_LOOPS,
  code_class: CODE_CLASSES,
  connection: ['new', 'reused'],
  phase: PHASES,
  tls_version: TLS_VERSIONS,
  handshake: ['full', 'resumed'],
  quantile: ['0.5', '0.9', '0.95', '0.99', '0.999'],
  scheme: ['http', 'https'],
  finding: 'finding codes (contracts/findings.ts)',
  severity: SEVERITIES,
  protocol: ['http/1.1', 'h2'],
  request: ['first', 'repeat'],
  message: ['request', 'response'],
  encoding: ACCEPT_ENCODINGS,
  layer: ['wire', 'body', 'decoded'],
  group: Object.keys(PUSH_GROUPS),
  state: QUEUE_STATES,
  persistence: REDIS_PERSISTENCE,
  kind: REDIS_ERROR_KINDS,
  variant:
    'the compared job\'s variant values joined by "/" ("reused/http", "1.3", "closed/reused"): closed sets per probe',
  quantity: THRESHOLD_QUANTITY_IDS,
  threshold: "the plan's threshold names (a threshold's name, else its quantity)",
  verdict: VERDICTS,
  resolver:
    "the dns probe's resolvers as the plan gives them: system, or HOST:PORT (lab:dns as the lab's address); at most 8 per experiment",
  record_type: DNS_RECORD_TYPES,
  cache: DNS_CACHES,
};
