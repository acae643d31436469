// The three dashboards. Panels over last-run gauges show "one number per region and target" that
// holds between nightly runs; panels over cumulative counters and histograms use increase() over
// the $window variable (a day holds one nightly run).
import { selector as sel, VARIABLES, type Dashboard, withTargetLabel } from './grafana.js';

const label = VARIABLES.label;

const w = VARIABLES.window;

/** histogram_quantile over the increase of a histogram in the window. */
const quantile = (q: number, metric: string, by: string, matchers: string) =>
  `histogram_quantile(${q}, sum by (${by}, le) (increase(${metric}_bucket${matchers}[${w}])))`;

/** Connections opened per request in the window. */
const connectionsPerRequest = (probe: string, by = 'region, target, mode') =>
  `sum by (${by}) (increase(probefleet_connections_opened_total${sel({ probe })}[${w}]))\n/\n` +
  `sum by (${by}) (increase(probefleet_requests_total${sel({ probe })}[${w}]))`;

export const connectionCostDashboard: Dashboard = {
  uid: 'probefleet-connection-cost',
  title: 'probefleet / Regional connection cost',
  description:
    'What a new connection costs from each region, and where the time goes: new-connection cost per region and target, TLS handshakes, reused vs new requests, connections per request.',
  panels: [
    {
      title: 'New-connection cost, last run',
      description:
        'median(new) - median(reused) per request in the last run, per region and target: one number for each. Reuse probe with modes reused and new.',
      kind: 'bargauge',
      unit: 's',
      queries: [
        {
          expr: `max by (region, target, scheme) (probefleet_new_connection_cost_seconds${sel()})`,
          legend: '{{region}} {{target}} ({{scheme}})',
        },
      ],
    },
    {
      title: `New-connection cost by ${label}, last run`,
      description:
        "The new-connection cost of the last run grouped by a label of the plans' targets (targetLabels: team, service...): the median over each value's targets and regions, and its costliest one. Choose the label in Group by.",
      kind: 'bargauge',
      unit: 's',
      queries: [
        {
          expr: `quantile by (${label}) (0.5, ${withTargetLabel(`probefleet_new_connection_cost_seconds${sel()}`, 'plan, region, target')})`,
          legend: `{{${label}}} median`,
        },
        {
          expr: `max by (${label}) (${withTargetLabel(`probefleet_new_connection_cost_seconds${sel()}`, 'plan, region, target')})`,
          legend: `{{${label}}} costliest`,
        },
      ],
    },
    {
      title: 'New-connection cost in the tail per region, last run (p95, p99)',
      description:
        'What the slow new connections cost: p95 and p99 of the time new connections took to open (resolve + connect + TLS) in the last run, beside the median cost. A lost SYN adds a 1 s retransmission timeout, a lost handshake flight 200 ms or more: they show here long before the median moves.',
      kind: 'bargauge',
      unit: 's',
      queries: [
        {
          expr: `max by (region, target, scheme) (probefleet_new_connection_cost_seconds${sel()})`,
          legend: '{{region}} {{target}} median',
        },
        {
          expr: `max by (region, target, scheme, quantile) (probefleet_new_connection_cost_tail_seconds${sel()})`,
          legend: '{{region}} {{target}} quantile {{quantile}}',
        },
      ],
    },
    {
      title: 'Changes since the previous run',
      description:
        'How many quantities of the last run (per region: new-connection cost, phases, handshakes, bytes, errors, load) regressed, improved or stayed unchanged against the run before it. `probefleet compare --redis --previous` lists them.',
      kind: 'bargauge',
      unit: 'none',
      queries: [
        {
          expr: `sum by (region, verdict) (probefleet_comparison_verdict${sel()})`,
          legend: '{{region}} {{verdict}}',
        },
      ],
    },
    {
      title: 'New-connection cost over time, with its 95% interval',
      description: 'The last-run cost and its bootstrap interval, as each nightly run left them.',
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: `max by (region, target) (probefleet_new_connection_cost_seconds${sel()})`,
          legend: '{{region}} {{target}}',
        },
        {
          expr: `max by (region, target) (probefleet_new_connection_cost_ci95_lower_seconds${sel()})`,
          legend: '{{region}} {{target}} 95% low',
        },
        {
          expr: `max by (region, target) (probefleet_new_connection_cost_ci95_upper_seconds${sel()})`,
          legend: '{{region}} {{target}} 95% high',
        },
      ],
    },
    {
      title: 'TLS handshake p50, p95 and p99 by region (full handshakes)',
      description: 'Over every full handshake of the tls probe in the window, all selected targets together.',
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: quantile(0.5, 'probefleet_tls_handshake_seconds', 'region', sel({ handshake: 'full' })),
          legend: '{{region}} p50',
        },
        {
          expr: quantile(0.95, 'probefleet_tls_handshake_seconds', 'region', sel({ handshake: 'full' })),
          legend: '{{region}} p95',
        },
        {
          expr: quantile(0.99, 'probefleet_tls_handshake_seconds', 'region', sel({ handshake: 'full' })),
          legend: '{{region}} p99',
        },
      ],
    },
    {
      title: 'TLS handshake p95 per target, last run',
      description:
        'What the handshake alerts look at: the p95 of full handshakes in the last run, per region, target and TLS version.',
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: `max by (region, target, tls_version) (probefleet_last_run_tls_handshake_seconds${sel({ handshake: 'full', quantile: '0.95' })})`,
          legend: '{{region}} {{target}} TLS {{tls_version}}',
        },
      ],
    },
    {
      title: 'Request time: reused vs new connection (median)',
      description:
        'Total time per request of the reuse probe, on a kept-alive connection and on a new one, per region.',
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: quantile(
            0.5,
            'probefleet_request_phase_seconds',
            'region, connection',
            sel({ probe: 'reuse', phase: 'total', mode: '=~"reused|new"' }),
          ),
          legend: '{{region}} {{connection}}',
        },
      ],
    },
    {
      title: "Where a new connection's time goes (median per phase)",
      description:
        "Phases of requests on new connections (reuse probe, mode new): resolve (a target's `dns` settings: a lookup per connection when cold, ≈ 0 when warm), TCP connect, TLS, processing (time to first byte), transfer.",
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: quantile(
            0.5,
            'probefleet_request_phase_seconds',
            'region, phase',
            sel({ probe: 'reuse', mode: 'new', connection: 'new', phase: '!="total"' }),
          ),
          legend: '{{region}} {{phase}}',
        },
      ],
    },
    {
      title: 'IPv4 vs IPv6: connect time of dual-stack targets (median)',
      description:
        "TCP connect of new connections to the targets `ipFamily: both` makes, NAME-ipv4 and NAME-ipv6 side by side, per region: each family's round trip (IP_FAMILY_SLOWER when one is 1.5 × the other and 5 ms more).",
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: quantile(
            0.5,
            'probefleet_request_phase_seconds',
            'region, target',
            sel({ target: '=~".+-ipv[46]"', connection: 'new', phase: 'connect' }),
          ),
          legend: '{{region}} {{target}}',
        },
      ],
    },
    {
      title: 'DNS lookup time per resolver: cold vs warm',
      description:
        "The dns probe's lookups of each target's name: cold (a query each, nothing cached in the client; median and p95) and warm (a client cache honouring the TTL: mostly cache hits; median), per region, resolver and record type.",
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: quantile(0.5, 'probefleet_dns_lookup_seconds', 'region, resolver, record_type, cache', sel()),
          legend: '{{region}} {{resolver}} {{record_type}} {{cache}} p50',
        },
        {
          expr: quantile(
            0.95,
            'probefleet_dns_lookup_seconds',
            'region, resolver, record_type',
            sel({ cache: 'cold' }),
          ),
          legend: '{{region}} {{resolver}} {{record_type}} cold p95',
        },
      ],
    },
    {
      title: 'Connections per request',
      description:
        'Connections opened per request of the reuse probe, per mode: near 0 when connections are reused, 1 when every request opens one (or the server closes them).',
      kind: 'timeseries',
      unit: 'none',
      queries: [{ expr: connectionsPerRequest('reuse'), legend: '{{region}} {{target}} {{mode}}' }],
      width: 24,
    },
  ],
};

export const protocolsDashboard: Dashboard = {
  uid: 'probefleet-protocols-payloads',
  title: 'probefleet / Protocols and payloads',
  description:
    'What HTTP/2 and compression change, and what CORS and unread bodies cost: header bytes, concurrent requests, bytes per encoding, findings over time.',
  panels: [
    {
      title: 'Header bytes: HTTP/1.1 vs HTTP/2 (last run)',
      description:
        'One request and its response: HTTP/1.1 heads (the same on every request), the first HTTP/2 HEADERS frames on a connection (HPACK table empty) and the median repeat.',
      kind: 'timeseries',
      unit: 'bytes',
      queries: [
        {
          expr: `max by (target, protocol, request, message) (probefleet_header_bytes${sel()})`,
          legend: '{{target}} {{protocol}} {{request}} {{message}}',
        },
      ],
    },
    {
      title: 'Concurrent requests: HTTP/1.1 pool vs one HTTP/2 connection (last run)',
      description:
        "Time from connecting to the last byte of the http2 probe's concurrent requests, and the connections each protocol opened.",
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: `max by (region, target, protocol) (probefleet_multiplex_seconds${sel()})`,
          legend: '{{region}} {{target}} {{protocol}}',
        },
        {
          expr: `max by (region, target, protocol) (probefleet_multiplex_connections${sel()})`,
          legend: '{{region}} {{target}} {{protocol}} connections',
        },
      ],
    },
    {
      title: 'Compression: bytes on the wire vs decoded, per encoding (last run)',
      description:
        'Per Accept-Encoding asked: every byte read from the connection for the response, and the body after decoding.',
      kind: 'timeseries',
      unit: 'bytes',
      queries: [
        {
          expr: `max by (target, encoding, layer) (probefleet_response_bytes${sel({ layer: '=~"wire|decoded"' })})`,
          legend: '{{target}} {{encoding}} {{layer}}',
        },
      ],
    },
    {
      title: 'Decode time per encoding (last run)',
      description: 'Median time to decode the body on the worker, per Accept-Encoding asked.',
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: `max by (region, target, encoding) (probefleet_decode_seconds${sel()})`,
          legend: '{{region}} {{target}} {{encoding}}',
        },
      ],
    },
    {
      title: 'CORS findings over time',
      description: 'Findings of the cors probe in each run (docs/plan.md, Findings): a line while the run finds it.',
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (region, target, finding) (probefleet_findings${sel({ probe: 'cors' })})`,
          legend: '{{region}} {{target}} {{finding}}',
        },
      ],
    },
    {
      title: 'Drain findings over time',
      description: 'Findings of the drain probe in each run: unread bodies that cost a connection each.',
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (region, target, finding) (probefleet_findings${sel({ probe: 'drain' })})`,
          legend: '{{region}} {{target}} {{finding}}',
        },
      ],
    },
    {
      title: 'Connections per request by body handling and client (drain)',
      description:
        'Connections opened per request of the drain probe, per mode (full, unread, drain, json) and client (go-before-1.27, go-1.27, undici).',
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: connectionsPerRequest('drain', 'region, target, mode, client'),
          legend: '{{region}} {{target}} {{mode}} {{client}}',
        },
      ],
    },
    {
      title: 'Load: answered requests per second (last run)',
      description:
        'Throughput of each load job: keep-alive connections (reused), a new connection per request (new), or HTTP/2 streams (h2); closed or open loop.',
      kind: 'timeseries',
      unit: 'reqps',
      queries: [
        {
          expr: `max by (region, target, mode, loop) (probefleet_load_requests_per_second${sel()})`,
          legend: '{{region}} {{target}} {{mode}} {{loop}}',
        },
      ],
    },
    {
      title: 'Load: p99 latency (last run)',
      description:
        'p99 latency of each load job from its HDR histogram (open loop: from the intended send time, so coordinated omission is corrected).',
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: `max by (region, target, mode, loop) (probefleet_load_latency_seconds${sel({ quantile: '0.99' })})`,
          legend: '{{region}} {{target}} {{mode}} {{loop}}',
        },
      ],
    },
    {
      title: 'Other findings over time',
      description: 'Findings of the other probes (reuse, tls, http2, compression, dns) in each run.',
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (region, target, probe, finding) (probefleet_findings${sel({ probe: '!~"cors|drain"' })})`,
          legend: '{{region}} {{target}} {{finding}}',
        },
      ],
    },
  ],
};

export const fleetDashboard: Dashboard = {
  uid: 'probefleet-fleet',
  title: 'probefleet / Fleet',
  description:
    'Is the fleet measuring? Queue depth, job outcomes, worker liveness, the last successful run per region, push failures.',
  panels: [
    {
      title: 'Queue depth by region and state',
      description: "Jobs in each region's queue (coordinator /metrics).",
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (region, state) (probefleet_queue_jobs${sel({}, { target: false })})`,
          legend: '{{region}} {{state}}',
        },
      ],
    },
    {
      title: 'Workers connected per region',
      description: "Workers connected to each region's queue (coordinator /metrics): 0 means the region's jobs wait.",
      kind: 'timeseries',
      unit: 'none',
      queries: [
        { expr: `sum by (region) (probefleet_queue_workers${sel({}, { target: false })})`, legend: '{{region}}' },
      ],
    },
    {
      title: 'Last successful job per region',
      description: 'When a probe job last finished without error in each region (pushed by the workers).',
      kind: 'stat',
      unit: 'dateTimeFromNow',
      queries: [
        {
          expr: `max by (region) (probefleet_probe_last_success_timestamp_seconds${sel()}) * 1000`,
          legend: '{{region}}',
        },
      ],
    },
    {
      title: 'Last run with results per region',
      description:
        'When the last run of any plan with results from the region finished; the nightly-run alert fires after 26 hours.',
      kind: 'stat',
      unit: 'dateTimeFromNow',
      queries: [
        {
          expr: `max by (region) (probefleet_last_run_timestamp_seconds${sel({}, { target: false })}) * 1000`,
          legend: '{{region}}',
        },
      ],
    },
    {
      title: 'Job outcomes of finished runs',
      description:
        'Jobs of the runs the coordinator finished in the window: ok, error (the target failed), failed (no result), not_run.',
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (region, outcome) (increase(probefleet_run_jobs_total${sel({}, { target: false })}[${w}]))`,
          legend: '{{region}} {{outcome}}',
        },
      ],
    },
    {
      title: `Probes that succeeded by ${label}, last run`,
      description:
        "Per value of a label of the plans' targets (choose it in Group by): the share of its targets' probes whose every job succeeded in the last run of their plan, per region.",
      kind: 'bargauge',
      unit: 'percentunit',
      queries: [
        {
          expr: `avg by (region, ${label}) (${withTargetLabel(`probefleet_probe_success${sel()}`, 'plan, region, target')})`,
          legend: `{{region}} {{${label}}}`,
        },
      ],
    },
    {
      title: `Probe jobs by ${label} and outcome`,
      description:
        "Jobs the workers ran in the window, grouped by a label of the plans' targets (choose it in Group by): ok, or the error code of a job that could not measure everything.",
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (${label}, outcome) (${withTargetLabel(`increase(probefleet_probe_jobs_total${sel()}[${w}])`, 'region, target')})`,
          legend: `{{${label}}} {{outcome}}`,
        },
      ],
    },
    {
      title: 'Probe jobs by probe and outcome',
      description:
        'Jobs the workers ran in the window: ok, or the error code of a job that could not measure everything.',
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (probe, outcome) (increase(probefleet_probe_jobs_total${sel()}[${w}]))`,
          legend: '{{probe}} {{outcome}}',
        },
      ],
    },
    {
      title: "Worker liveness: time since each worker's last job",
      description: 'Per pushing process (region, instance): how long ago it last finished a job.',
      kind: 'timeseries',
      unit: 's',
      queries: [
        {
          expr: `time() - max by (region, instance) (probefleet_probe_last_run_timestamp_seconds${sel()})`,
          legend: '{{region}} {{instance}}',
        },
      ],
    },
    {
      title: 'Jobs taken per worker',
      description:
        'Jobs each scraped worker took in the window (worker /metrics), by outcome, and the jobs running now.',
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (region, instance, outcome) (increase(probefleet_worker_jobs_total${sel({}, { target: false })}[${w}]))`,
          legend: '{{region}} {{instance}} {{outcome}}',
        },
        {
          expr: `sum by (region, instance) (probefleet_worker_jobs_in_flight${sel({}, { target: false })})`,
          legend: '{{region}} {{instance}} running',
        },
      ],
    },
    {
      title: 'Runs finished',
      description:
        'Runs the coordinator turned into reports in the window: complete, or partial (some jobs without a result).',
      kind: 'timeseries',
      unit: 'none',
      queries: [{ expr: `sum by (outcome) (increase(probefleet_runs_total[${w}]))`, legend: '{{outcome}}' }],
    },
    {
      title: 'Workers lost mid-job, and Redis',
      description:
        "Times a worker was lost while running a job (killed, hung or cut off from Redis: the job's lock expired), counted as runs finish; and whether Redis answers the coordinator (1) or not (0).",
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (region) (increase(probefleet_jobs_stalled_total${sel({}, { target: false })}[${w}]))`,
          legend: '{{region}} workers lost',
        },
        { expr: 'min(probefleet_redis_up)', legend: 'Redis answers' },
      ],
    },
    {
      title: 'Pushgateway push failures',
      description:
        'Pushes that failed after their retries, per process (worker and coordinator /metrics); the measurements went on without them.',
      kind: 'timeseries',
      unit: 'none',
      queries: [
        {
          expr: `sum by (job, instance, group) (increase(probefleet_push_failures_total[${w}]))`,
          legend: '{{job}} {{instance}} {{group}}',
        },
      ],
    },
  ],
};

export const DASHBOARDS = [connectionCostDashboard, protocolsDashboard, fleetDashboard] as const;
