// The lecture's table: per target and mode, connections opened, wall time, per-request spread.
import type { ResultOf } from '../../../contracts/result.js';
import { formatMs } from '../format.js';
import { renderTable } from '../table.js';

const MODE_ORDER = ['reused', 'new', 'cold'];

export function reuseSection(results: ResultOf<'reuse'>[]): string {
  const rows = [...results]
    .sort((a, b) => a.region.localeCompare(b.region) || a.target.localeCompare(b.target) || MODE_ORDER.indexOf(a.variant.mode) - MODE_ORDER.indexOf(b.variant.mode))
    .map((r) => [
      r.region,
      r.target,
      r.variant.mode,
      String(r.summary.requests),
      String(r.summary.connectionsOpened),
      formatMs(r.summary.durationMs),
      formatMs(r.summary.phases.total?.p50),
      formatMs(r.summary.phases.total?.p95),
      r.summary.errors > 0 ? `${r.summary.errors} (${r.error?.code ?? 'see JSON'})` : '0',
    ]);
  return [
    'Connection reuse: requests per mode (total = wall time of all requests of the job)',
    renderTable(['region', 'target', 'mode', 'requests', 'new conns', 'total', 'median/req', 'p95/req', 'errors'], rows, 'lllrrrrrr'),
  ].join('\n');
}
