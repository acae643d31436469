// Load results: throughput and latency percentiles per region, target and mode; where an
// experiment ran in several regions, a row with their histograms merged. Open-loop runs get a
// second table: latency from the intended send time next to the time from the actual send. A load
// spread over several workers (`workers`) is one row, merged, and a table of each worker's part.
import { type LatencyPercentiles, type LoadDetails, SATURATED_UTILIZATION } from '../../../contracts/probes/load.js';
import type { ResultOf } from '../../../contracts/result.js';
import { loadTotals } from '../../load-totals.js';
import type { BarChart, ReportBlock, ReportSection } from '../document.js';
import { formatCount, formatMs } from '../format.js';
import { barLabeller, byTarget, errorsCell, nothingMeasured } from './place.js';
import { plural } from '../../../common/plural.js';

type LoadResult = ResultOf<'load'>;

function loadShape(r: LoadResult): string {
  const d = r.details;
  if (!d) return '-';
  const conns =
    d.mode === 'h2' ? `${d.connections} conns x ${d.concurrency / d.connections} streams` : `${d.connections} conns`;
  const shape = d.rate === undefined ? conns : `${formatCount(d.rate)}/s, ${conns}`;
  return d.shards ? `${shape}, ${plural(d.shards.length, 'worker')}` : shape;
}

function latencyCells(l: LatencyPercentiles | undefined): string[] {
  return l && l.n > 0 ? [l.p50, l.p90, l.p99, l.p999, l.max].map((ms) => formatMs(ms)) : ['-', '-', '-', '-', '-'];
}

function errorCell(r: LoadResult): string {
  const count = r.summary.errors;
  const errors = r.details?.errors;
  if (count === 0) return errorsCell(r);
  const top = Object.entries(errors ?? {}).sort((a, b) => b[1] - a[1])[0];
  return top ? `${formatCount(count)} (${top[0]})` : formatCount(count);
}

function non2xx(d: LoadDetails | null): string {
  if (!d) return '-';
  return formatCount(Object.entries(d.statuses).reduce((n, [cls, count]) => (cls === '2xx' ? n : n + count), 0));
}

const inOrder = (results: LoadResult[]) =>
  [...results].sort(
    (a, b) =>
      a.target.localeCompare(b.target) ||
      a.variant.mode.localeCompare(b.variant.mode) ||
      a.region.localeCompare(b.region),
  );

function throughputChart(results: LoadResult[]): BarChart {
  const label = barLabeller(results);
  return {
    id: 'load-throughput',
    title: 'Answered requests per second',
    description:
      'Throughput of each load job: keep-alive connections (reused), a new connection per request (new), or HTTP/2 streams (h2), ' +
      'with its p99 latency beside it. Longer is better.',
    unit: 'count',
    groups: byTarget(inOrder(results)).map(([target, mine]) => ({
      label: target,
      bars: mine.map((r) => ({
        label: label(r, `${r.variant.mode} (${loadShape(r)})`),
        series: r.variant.mode,
        value: r.details?.requestsPerSecond ?? 0,
        text:
          nothingMeasured(r) ??
          `${formatCount(r.details?.requestsPerSecond ?? 0)} req/s, p99 ${formatMs(r.details?.latencyMs.p99)}`,
      })),
    })),
  };
}

export function loadView(results: LoadResult[]): ReportSection {
  const sorted = inOrder(results);
  const rows = sorted.map((r) => [
    r.region,
    r.target,
    r.variant.mode,
    loadShape(r),
    r.details ? formatCount(r.details.completed) : '-',
    r.details ? formatCount(r.details.requestsPerSecond) : '-',
    ...latencyCells(r.details?.latencyMs),
    errorCell(r),
    non2xx(r.details),
    formatCount(r.summary.connectionsOpened),
  ]);
  for (const total of loadTotals(results).filter((t) => t.regions.length > 1)) {
    rows.push([
      `all ${plural(total.regions.length, 'region')}`,
      total.target,
      total.variant.mode,
      total.variant.loop,
      formatCount(total.completed),
      formatCount(total.requestsPerSecond),
      ...latencyCells(total.latencyMs),
      formatCount(total.errors),
      '',
      formatCount(total.connectionsOpened),
    ]);
  }
  const blocks: ReportBlock[] = [
    { kind: 'chart', chart: throughputChart(results) },
    {
      kind: 'table',
      title:
        "Load: answered requests per second and latency percentiles (open loop: from each request's intended send time)",
      table: {
        headers: [
          'region',
          'target',
          'mode',
          'load',
          'answered',
          'req/s',
          'p50',
          'p90',
          'p99',
          'p99.9',
          'max',
          'errors',
          'non-2xx',
          'conns opened',
        ],
        align: 'llllrrrrrrrrrr',
        rows,
      },
    },
  ];

  const measured = sorted.filter((r) => r.details);
  if (measured.length > 0) {
    blocks.push({
      kind: 'table',
      title: `The load generator: how busy its threads were (${Math.round(SATURATED_UTILIZATION * 100)}% or more: the client, not the target, set the pace; LOAD_CLIENT_SATURATED)`,
      table: {
        headers: ['region', 'target', 'mode', 'threads', 'cores', 'busiest thread', 'CPU'],
        align: 'lllrrrr',
        rows: measured.map((r) => {
          const client = r.details!.client;
          return [
            r.region,
            r.target,
            r.variant.mode,
            String(client.threads),
            String(client.cores),
            `${Math.round(Math.max(...client.eventLoopUtilization) * 100)}%`,
            `${client.cpuSeconds.toFixed(1)} s`,
          ];
        }),
      },
    });
  }

  const open = sorted.filter((r) => r.details?.loop === 'open');
  if (open.length > 0) {
    blocks.push({
      kind: 'table',
      title:
        'Open loop: latency from the intended send time (corrected) vs from the actual send time (what a closed-loop tool reports)',
      table: {
        headers: [
          'region',
          'target',
          'mode',
          'rate',
          'scheduled',
          'unsent',
          'p50 intended',
          'p50 sent',
          'p99 intended',
          'p99 sent',
        ],
        align: 'lllrrrrrrr',
        rows: open.map((r) => {
          const d = r.details!;
          return [
            r.region,
            r.target,
            r.variant.mode,
            `${formatCount(d.rate ?? 0)}/s`,
            formatCount(d.scheduled ?? 0),
            formatCount(d.unsent ?? 0),
            formatMs(d.latencyMs.p50),
            formatMs(d.serviceTimeMs?.p50),
            formatMs(d.latencyMs.p99),
            formatMs(d.serviceTimeMs?.p99),
          ];
        }),
      },
    });
  }
  const spread = sorted.filter((r) => r.details?.shards);
  if (spread.length > 0) {
    blocks.push({
      kind: 'table',
      title:
        "Load spread over several workers: each worker's part (started: after the first of them; the row above merges their histograms)",
      table: {
        headers: [
          'region',
          'target',
          'mode',
          'worker',
          'host',
          'pid',
          'started',
          'conns',
          'answered',
          'req/s',
          'p50',
          'p99',
          'errors',
        ],
        align: 'lllrlrrrrrrrr',
        rows: spread.flatMap((r) =>
          r.details!.shards!.map((shard) => [
            r.region,
            r.target,
            r.variant.mode,
            String(shard.index + 1),
            shard.worker.host,
            String(shard.worker.pid),
            `+${formatMs(shard.startOffsetMs)}`,
            formatCount(shard.connections),
            formatCount(shard.completed),
            formatCount(shard.requestsPerSecond),
            formatMs(shard.latencyMs.p50),
            formatMs(shard.latencyMs.p99),
            shard.error ? `${formatCount(shard.errors)} (${shard.error.code})` : formatCount(shard.errors),
          ]),
        ),
      },
    });
  }
  return { heading: 'Load', blocks };
}
