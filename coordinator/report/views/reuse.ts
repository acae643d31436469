// The keep-alive table and bar chart of the HTTP performance lecture (docs/probes.md#sources): per
// target and mode, connections opened, the wall time of all requests, and the per-request spread.
import type { ResultOf } from '../../../contracts/result.js';
import type { BarChart, ReportSection } from '../document.js';
import { median } from '../../../common/stats.js';
import { formatMs } from '../format.js';
import { barLabeller, byPlace, byTarget, errorsCell, nothingMeasured } from './place.js';

const MODE_ORDER = ['reused', 'new', 'cold'];

/** The mode, with the client that ran a `cold` job: "cold (curl 7.88.1)". */
export const modeWithClient = (r: ResultOf<'reuse'>) =>
  r.details?.client ? `${r.variant.mode} (${r.details.client.label})` : r.variant.mode;

const inOrder = (results: ResultOf<'reuse'>[]) =>
  [...results].sort((a, b) => byPlace(a, b) || MODE_ORDER.indexOf(a.variant.mode) - MODE_ORDER.indexOf(b.variant.mode));

function totalTimeChart(results: ResultOf<'reuse'>[]): BarChart {
  const label = barLabeller(results);
  return {
    id: 'reuse-total-time',
    title: 'Total time per mode',
    description:
      'Wall time of all requests of each job: over one kept-alive connection (reused), a new connection per request (new), ' +
      'or a new client process per request (cold, with the client that ran it). Shorter is better.',
    unit: 'ms',
    groups: byTarget(inOrder(results)).map(([target, mine]) => ({
      label: target,
      bars: mine.map((r) => ({
        label: label(r, modeWithClient(r)),
        series: r.variant.mode,
        value: r.summary.durationMs,
        text: nothingMeasured(r) ?? `${formatMs(r.summary.durationMs)} for ${r.summary.requests} requests`,
      })),
    })),
  };
}

export function reuseView(results: ResultOf<'reuse'>[]): ReportSection {
  const rows = inOrder(results).map((r) => [
    r.region,
    r.target,
    modeWithClient(r),
    String(r.summary.requests),
    String(r.summary.connectionsOpened),
    formatMs(r.summary.durationMs),
    formatMs(r.summary.phases.total?.p50),
    formatMs(r.summary.phases.total?.p95),
    formatMs(r.summary.phases.total?.p99),
    errorsCell(r),
  ]);
  return {
    heading: 'Connection reuse',
    blocks: [
      { kind: 'chart', chart: totalTimeChart(results) },
      {
        kind: 'table',
        title: 'Connection reuse: requests per mode (total = wall time of all requests of the job)',
        table: {
          headers: [
            'region',
            'target',
            'mode',
            'requests',
            'new conns',
            'total',
            'median/req',
            'p95/req',
            'p99/req',
            'errors',
          ],
          align: 'lllrrrrrrr',
          rows,
        },
      },
      ...proxiedBlocks(results),
    ],
  };
}

/** Jobs whose connections went through a proxy: what opening one cost, phase by phase. */
function proxiedBlocks(results: ResultOf<'reuse'>[]): ReportSection['blocks'] {
  const proxied = inOrder(results).filter((r) => openedMedian(r, 'proxy') !== undefined);
  if (proxied.length === 0) return [];
  return [
    {
      kind: 'table',
      title:
        'Through a proxy: opening a connection, phase by phase (medians over the requests that opened one; proxy = the CONNECT round trip)',
      table: {
        headers: ['region', 'target', 'mode', 'new conns', 'connect', 'proxy', 'tls'],
        align: 'lllrrrr',
        rows: proxied.map((r) => [
          r.region,
          r.target,
          modeWithClient(r),
          String(r.summary.connectionsOpened),
          formatMs(openedMedian(r, 'connect')),
          formatMs(openedMedian(r, 'proxy')),
          formatMs(openedMedian(r, 'tls')),
        ]),
      },
    },
  ];
}

/** The median of a phase over the requests that opened their connection (a reused one's is 0),
 * a response that failed the target's checks included: its connection was opened all the same. */
function openedMedian(r: ResultOf<'reuse'>, phase: 'connect' | 'proxy' | 'tls'): number | undefined {
  const values = (r.details?.samples ?? []).flatMap((s) =>
    s.newConnection && (!s.error || s.error.code === 'RESPONSE_CHECK_FAILED') && s.phases[phase] !== undefined
      ? [s.phases[phase]]
      : [],
  );
  return values.length > 0 ? median(values) : undefined;
}
