// The connection-reuse article's benchmark: per body handling, how many connections N
// sequential requests opened, and how long they took.
import { DRAIN_CLIENTS, DRAIN_MODES } from '../../../contracts/probes/drain.js';
import type { ResultOf } from '../../../contracts/result.js';
import type { BarChart, ReportSection } from '../document.js';
import { plural } from '../../../common/plural.js';
import { formatMs } from '../format.js';
import { barLabeller, byPlace, byTarget, errorsCell, nothingMeasured } from './place.js';

type DrainResult = ResultOf<'drain'>;

const MODE_ORDER: readonly string[] = DRAIN_MODES;
const CLIENT_ORDER: readonly string[] = DRAIN_CLIENTS;

const modeName = (r: DrainResult) =>
  r.variant.mode === 'drain' && r.details?.drainCap
    ? `drain ≤${Math.round(r.details.drainCap.bytes / 1024)} KiB/${r.details.drainCap.ms} ms`
    : r.variant.mode;

function connectionsChart(results: DrainResult[]): BarChart {
  const label = barLabeller(results);
  return {
    id: 'drain-connections',
    title: 'Connections opened per body handling',
    description:
      'Connections that N sequential requests over one client opened, per way of handling each body (read to its end, ' +
      'closed unread, drained within a cap, or decoded as JSON up to its closing bracket) and per HTTP client, whose ' +
      'policy for a body closed early each bar shows (Go before 1.27, Go 1.27, undici). One connection means every request reused it.',
    unit: 'count',
    groups: byTarget(results).map(([target, mine]) => ({
      label: target,
      bars: mine.map((r) => ({
        label: label(r, `${modeName(r)} · ${r.variant.client}`),
        series: r.variant.client,
        value: r.summary.connectionsOpened,
        text:
          nothingMeasured(r) ??
          `${plural(r.summary.connectionsOpened, 'connection')} for ${r.summary.requests} requests`,
      })),
    })),
  };
}

export function drainView(results: DrainResult[]): ReportSection {
  const sorted = [...results].sort(
    (a, b) =>
      byPlace(a, b) ||
      MODE_ORDER.indexOf(a.variant.mode) - MODE_ORDER.indexOf(b.variant.mode) ||
      CLIENT_ORDER.indexOf(a.variant.client) - CLIENT_ORDER.indexOf(b.variant.client),
  );
  const count = (r: DrainResult, test: (s: NonNullable<DrainResult['details']>['samples'][number]) => boolean) =>
    String(r.details?.samples.filter((s) => !s.error && test(s)).length ?? '-');
  // One line per distinct note (HTTP/2 support), naming the targets it is about.
  const notes = new Map<string, Set<string>>();
  for (const r of sorted)
    if (r.details) notes.set(r.details.http2.note, (notes.get(r.details.http2.note) ?? new Set()).add(r.target));
  return {
    heading: 'Unread bodies and connection reuse',
    blocks: [
      { kind: 'chart', chart: connectionsChart(sorted) },
      {
        kind: 'table',
        title:
          'Drain: sequential HTTP/1.1 requests per body handling and client (the client whose policy for a body closed early the row shows; total = wall time of all requests of the job)',
        table: {
          headers: [
            'region',
            'target',
            'mode',
            'client',
            'requests',
            'new conns',
            'extra',
            'total',
            'median/req',
            'closed early',
            'conn: close',
            'errors',
          ],
          align: 'llllrrrrrrrr',
          rows: sorted.map((r) => [
            r.region,
            r.target,
            modeName(r),
            r.variant.client,
            String(r.summary.requests),
            String(r.summary.connectionsOpened),
            String(r.details?.extraConnections ?? '-'),
            formatMs(r.summary.durationMs),
            formatMs(r.summary.phases.total?.p50),
            count(r, (s) => s.body.outcome === 'closed-early'),
            count(r, (s) => s.serverClosed === true),
            errorsCell(r),
          ]),
        },
        notes: [...notes].map(([note, targets]) => `${[...targets].join(', ')}: ${note}`),
      },
    ],
  };
}
