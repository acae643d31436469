// Metrics for `probefleet demo`'s fleet: a Pushgateway and a Prometheus of its own on free ports of
// this machine's loopback, when Debian's prometheus and prometheus-pushgateway are installed.
//
//   each region:   worker ── 127.0.0.1:P, port relay, no delay ──▶ Pushgateway 127.0.0.1:P
//   this machine:  coordinator, `probefleet run` ──────────────────▶ Pushgateway
//                  Prometheus ── scrape every second (honor_labels) ─┘, with the repo's alert rules
//
// Both are tied to this process (regions/system.ts) and keep their files under the regions' run
// directory, so the regions' cleanup (cleanup.ts) removes them after a Ctrl-C or a SIGKILL too.
import { fileURLToPath } from 'node:url';
import {
  startPrometheus,
  startPushgateway,
  PROMETHEUS_BINARIES,
  type Prometheus,
  type PromSample,
  type Pushgateway,
} from '../common/prometheus-server.js';
import { PUSH_GROUPS, PROBE_JOB_METRICS, RUN_METRICS } from '../contracts/metric-names.js';
import { prometheusConfig } from '../common/prometheus-config.js';
import { formatMs } from '../coordinator/report/format.js';
import { renderTable } from '../coordinator/report/table.js';
import { hasCommand, TIED_TO_THIS_PROCESS } from './system.js';

const ALERT_RULES = fileURLToPath(new URL('../../dashboards/alerts/probefleet.rules.yml', import.meta.url));
/** How long the demo waits (twice: the run's groups, the workers' jobs) for Prometheus to have scraped the last pushes. */
const SCRAPED_TIMEOUT_MS = 15_000;

/** Why the demo runs without metrics here, or false. */
export function fleetMetricsMissing(): string | false {
  const missing = [PROMETHEUS_BINARIES.prometheus, PROMETHEUS_BINARIES.pushgateway].filter(
    (command) => !hasCommand(command),
  );
  return missing.length === 0
    ? false
    : `${missing.join(' and ')} not found (apt-get install prometheus prometheus-pushgateway)`;
}

export interface FleetMetrics {
  pushgateway: Pushgateway;
  prometheus: Prometheus;
  /** For every worker, the coordinator and `run`: the same address on this machine and, through the port relay, in every region. */
  pushgatewayUrl: string;
  /** Waits (bounded) until Prometheus has scraped every region's run group and the workers'
   * pushes of all `jobsPerRegion`, then renders what it holds for the plan. */
  regionalComparison(plan: string, jobsPerRegion: Map<string, number>): Promise<string>;
  close(): Promise<void>;
}

export interface FleetMetricsOptions {
  /** Taken before the regions are built, so that it can be forwarded into them. */
  pushgatewayPort: number;
  /** Where their files go: the regions' run directory. */
  parentDir: string;
}

export async function startFleetMetrics(options: FleetMetricsOptions): Promise<FleetMetrics> {
  const service = { launcher: TIED_TO_THIS_PROCESS, parentDir: options.parentDir };
  const [gateway, prom] = await Promise.allSettled([
    startPushgateway({ ...service, port: options.pushgatewayPort }),
    startPrometheus(
      prometheusConfig({
        pushgateway: [`127.0.0.1:${options.pushgatewayPort}`],
        coordinator: [],
        workers: [],
        rules: [ALERT_RULES],
        scrapeInterval: '1s',
        evaluationInterval: '1s',
      }),
      {},
      service,
    ),
  ]);
  if (gateway.status === 'rejected' || prom.status === 'rejected') {
    await Promise.all(
      [gateway, prom].map((started) => (started.status === 'fulfilled' ? started.value.stop() : undefined)),
    );
    throw gateway.status === 'rejected' ? gateway.reason : (prom as PromiseRejectedResult).reason;
  }
  const pushgateway = gateway.value;
  const prometheus = prom.value;

  return {
    pushgateway,
    prometheus,
    pushgatewayUrl: pushgateway.url,
    regionalComparison: (plan, jobsPerRegion) => regionalComparison(prometheus, plan, jobsPerRegion),
    async close() {
      await Promise.all([prometheus.stop(), pushgateway.stop()]);
    },
  };
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return [...groups.values()].sort((a, b) => keyOf(a[0]).localeCompare(keyOf(b[0])));
}

/** FleetMetrics.regionalComparison: waits for the pushes to be scraped, then a table per region. */
async function regionalComparison(
  prometheus: Prometheus,
  plan: string,
  jobsPerRegion: Map<string, number>,
): Promise<string> {
  const regions = [...jobsPerRegion.keys()];
  const planSelector = `job="${PUSH_GROUPS.run.job}", plan="${plan}"`;
  const jobsPushed = `sum by (region) (${PROBE_JOB_METRICS.jobs.name}{job="${PUSH_GROUPS.probes.job}"})`;
  let complete = true;
  try {
    await prometheus.waitFor(
      `count(${RUN_METRICS.lastRun.name}{${planSelector}})`,
      (n) => n === regions.length,
      SCRAPED_TIMEOUT_MS,
    );
    await prometheus.waitFor(
      `sum(${jobsPushed})`,
      (n) => n === [...jobsPerRegion.values()].reduce((a, b) => a + b, 0),
      SCRAPED_TIMEOUT_MS,
    );
  } catch {
    complete = false;
  }
  const queries = {
    cost: `${RUN_METRICS.newConnectionCost.name}{${planSelector}}`,
    // p95: a demo's runs open tens of new connections, too few for a p99 that means one in a hundred.
    tail: `${RUN_METRICS.newConnectionCostTail.name}{${planSelector}, quantile="0.95"}`,
    handshake: `${RUN_METRICS.tlsHandshake.name}{${planSelector}, handshake="full", quantile="0.5"}`,
    jobs: jobsPushed,
  };
  const [cost, tail, handshake, jobs] = await Promise.all([
    prometheus.query(queries.cost),
    prometheus.query(queries.tail),
    prometheus.query(queries.handshake),
    prometheus.query(queries.jobs),
  ]);
  const rows = new Map<string, Map<string, string>>();
  const put = (what: string, target: string, samples: PromSample[], format: (value: number) => string) => {
    const row = rows.get(`${what}\t${target}`) ?? new Map<string, string>();
    for (const s of samples) row.set(s.metric.region, format(Number(s.value[1])));
    rows.set(`${what}\t${target}`, row);
  };
  const seconds = (value: number) => formatMs(value * 1000);
  const key = (s: PromSample, label: string) => `${s.metric.target}\t${s.metric[label]}`;
  for (const group of groupBy(cost, (s) => key(s, 'scheme')))
    put(`new-connection cost (${group[0].metric.scheme})`, group[0].metric.target, group, seconds);
  for (const group of groupBy(tail, (s) => key(s, 'scheme')))
    put(`new-connection cost p95 (${group[0].metric.scheme})`, group[0].metric.target, group, seconds);
  for (const group of groupBy(handshake, (s) => key(s, 'tls_version')))
    put(`full TLS ${group[0].metric.tls_version} handshake, median`, group[0].metric.target, group, seconds);
  put('jobs pushed by its worker', '-', jobs, String);
  const table = renderTable(
    ['from Prometheus', 'target', ...regions],
    [...rows].map(([name, byRegion]) => [...name.split('\t'), ...regions.map((region) => byRegion.get(region) ?? '-')]),
    `ll${'r'.repeat(regions.length)}`,
  );
  return (
    `Metrics: the run's numbers as Prometheus holds them (scraped from the Pushgateway every second)${complete ? '' : `; not everything had arrived within ${SCRAPED_TIMEOUT_MS / 1000} s`}\n${table}\n` +
    `queries: ${[queries.cost, queries.tail, queries.handshake, queries.jobs].join('\n         ')}\n`
  );
}
