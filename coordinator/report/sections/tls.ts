// Per target and TLS version: what was negotiated, TCP connect and the handshake apart, full
// against resumed handshakes (the saving), and when the certificate expires.
import type { ResultOf } from '../../../contracts/result.js';
import { formatMs } from '../format.js';
import { renderTable } from '../table.js';

function certExpiry(notAfter: string | null, daysLeft: number | undefined): string {
  if (!notAfter || daysLeft === undefined) return '-';
  return `${notAfter.slice(0, 10)} (${Math.floor(daysLeft)} d)`;
}

export function tlsSection(results: ResultOf<'tls'>[]): string {
  const rows = [...results]
    .sort((a, b) => a.region.localeCompare(b.region) || a.target.localeCompare(b.target) || a.variant.version.localeCompare(b.variant.version))
    .map((r) => {
      const d = r.details;
      return [
        r.region,
        r.target,
        r.variant.version,
        d?.tlsVersion ?? '-',
        d?.alpn ?? '-',
        formatMs(d?.connectMs?.p50),
        formatMs(d?.handshakeMs?.p50),
        formatMs(d?.handshakeMs?.p95),
        formatMs(d?.resumedHandshakeMs?.p50),
        formatMs(d?.resumptionSavingMs ?? undefined),
        d?.resumption ? `${d.resumption.resumed}/${d.resumption.attempted}` : '-',
        certExpiry(d?.certNotAfter ?? null, d?.certificate?.daysLeft),
        r.summary.errors > 0 ? `${r.summary.errors} (${r.error?.code ?? 'see JSON'})` : '0',
      ];
    });
  return [
    'TLS handshakes: full (no session offered) vs resumed (the previous session offered); medians unless marked',
    renderTable(
      ['region', 'target', 'asked', 'negotiated', 'alpn', 'tcp connect', 'full', 'full p95', 'resumed', 'saving', 'resumed/tried', 'cert expires', 'errors'],
      rows,
      'lllllrrrrrrlr',
    ),
  ].join('\n');
}
