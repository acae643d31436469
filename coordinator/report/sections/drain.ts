// The connection-reuse article's benchmark: per body handling, how many connections N
// sequential requests opened, and how long they took.
import type { ResultOf } from '../../../contracts/result.js';
import { formatMs } from '../format.js';
import { renderTable } from '../table.js';

const MODE_ORDER = ['full', 'unread', 'drain', 'json'];

export function drainSection(results: ResultOf<'drain'>[]): string {
  const sorted = [...results].sort(
    (a, b) => a.region.localeCompare(b.region) || a.target.localeCompare(b.target) || MODE_ORDER.indexOf(a.variant.mode) - MODE_ORDER.indexOf(b.variant.mode),
  );
  const count = (r: ResultOf<'drain'>, test: (s: NonNullable<ResultOf<'drain'>['details']>['samples'][number]) => boolean) =>
    String(r.details?.samples.filter((s) => !s.error && test(s)).length ?? '-');
  const out = [
    'Drain: sequential HTTP/1.1 requests per body handling (total = wall time of all requests of the job)',
    renderTable(
      ['region', 'target', 'mode', 'requests', 'new conns', 'extra', 'total', 'median/req', 'closed early', 'conn: close', 'errors'],
      sorted.map((r) => [
        r.region,
        r.target,
        r.variant.mode === 'drain' && r.details?.drainCap ? `drain ≤${Math.round(r.details.drainCap.bytes / 1024)} KiB/${r.details.drainCap.ms} ms` : r.variant.mode,
        String(r.summary.requests),
        String(r.summary.connectionsOpened),
        String(r.details?.extraConnections ?? '-'),
        formatMs(r.summary.durationMs),
        formatMs(r.summary.phases.total?.p50),
        count(r, (s) => s.body.outcome === 'closed-early'),
        count(r, (s) => s.serverClosed === true),
        r.summary.errors > 0 ? `${r.summary.errors} (${r.error?.code ?? 'see JSON'})` : '0',
      ]),
      'lllrrrrrrrr',
    ),
  ];
  // One line per distinct note (HTTP/2 support), naming the targets it is about.
  const notes = new Map<string, Set<string>>();
  for (const r of sorted) if (r.details) notes.set(r.details.http2.note, (notes.get(r.details.http2.note) ?? new Set()).add(r.target));
  for (const [note, targets] of notes) out.push(`  ${[...targets].join(', ')}: ${note}`);
  return out.join('\n');
}
