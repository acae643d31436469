// Per target and TLS version: what was negotiated, TCP connect and the handshake apart, full
// against resumed handshakes (the saving), and when the certificate expires.
import type { ResultOf } from '../../../contracts/result.js';
import type { Bar, BarChart, ReportSection } from '../document.js';
import { formatMs } from '../format.js';
import { barLabeller, byPlace, byTarget, errorsCell, nothingMeasured } from './place.js';

function certExpiry(certificate: { notAfter: string | null; daysLeft: number | null } | null | undefined): string {
  if (!certificate) return '-';
  const { notAfter, daysLeft } = certificate;
  if (notAfter === null || daysLeft === null) return 'unreadable date';
  return `${notAfter.slice(0, 10)} (${Math.floor(daysLeft)} d)`;
}

const inOrder = (results: ResultOf<'tls'>[]) =>
  [...results].sort((a, b) => byPlace(a, b) || a.variant.version.localeCompare(b.variant.version));

/** Full handshakes, and resumed ones where resumption was tried. */
function handshakeBars(r: ResultOf<'tls'>, label: (r: ResultOf<'tls'>, text: string) => string): Bar[] {
  const d = r.details;
  const full = d?.handshakeMs;
  const bars: Bar[] = [
    {
      label: label(r, `TLS ${r.variant.version} full`),
      series: 'full',
      value: full?.p50 ?? 0,
      text: full
        ? `${formatMs(full.p50)} (p95 ${formatMs(full.p95)}, p99 ${formatMs(full.p99)}, ${full.n} handshakes)`
        : (nothingMeasured(r) ?? 'no handshake'),
    },
  ];
  if (d?.resumption && d.resumption.attempted > 0) {
    const resumed = d.resumedHandshakeMs;
    bars.push({
      label: label(r, `TLS ${r.variant.version} resumed`),
      series: 'resumed',
      value: resumed?.p50 ?? 0,
      text: resumed
        ? `${formatMs(resumed.p50)} (${d.resumption.resumed}/${d.resumption.attempted} resumed)`
        : `none resumed (0/${d.resumption.attempted})`,
    });
  }
  return bars;
}

function handshakeChart(results: ResultOf<'tls'>[]): BarChart {
  const label = barLabeller(results);
  return {
    id: 'tls-handshake-time',
    title: 'TLS handshake time per version, full and resumed',
    description:
      'Median time of the TLS handshake alone (after TCP connect) per TLS version: full handshakes, which offer no session, ' +
      'and resumed ones, which offer the session the full handshake before them left.',
    unit: 'ms',
    groups: byTarget(inOrder(results)).map(([target, mine]) => ({
      label: target,
      bars: mine.flatMap((r) => handshakeBars(r, label)),
    })),
  };
}

export function tlsView(results: ResultOf<'tls'>[]): ReportSection {
  const rows = inOrder(results).map((r) => {
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
      formatMs(d?.handshakeMs?.p99),
      formatMs(d?.resumedHandshakeMs?.p50),
      formatMs(d?.resumptionSavingMs ?? undefined),
      d?.resumption ? `${d.resumption.resumed}/${d.resumption.attempted}` : '-',
      certExpiry(d?.certificate),
      // The count: a failed job's code and message are in "Jobs that did not finish cleanly".
      errorsCell(r),
    ];
  });
  return {
    heading: 'TLS handshakes',
    blocks: [
      { kind: 'chart', chart: handshakeChart(results) },
      {
        kind: 'table',
        title:
          'TLS handshakes: full (no session offered) vs resumed (the previous session offered); medians unless marked',
        table: {
          headers: [
            'region',
            'target',
            'asked',
            'negotiated',
            'alpn',
            'tcp connect',
            'full',
            'full p95',
            'full p99',
            'resumed',
            'saving',
            'resumed / tried',
            'cert expires',
            'errors',
          ],
          align: 'lllllrrrrrrrlr',
          breakable: [12],
          rows,
        },
      },
      ...clientCertificateBlocks(results),
    ],
  };
}

/** Targets with a client certificate: the full handshake with it and without it (medians). */
function clientCertificateBlocks(results: ResultOf<'tls'>[]): ReportSection['blocks'] {
  const withCertificate = inOrder(results).filter((r) => r.details?.clientCertificate);
  if (withCertificate.length === 0) return [];
  return [
    {
      kind: 'table',
      title: 'TLS client certificate: what sending it adds to a full handshake (medians)',
      table: {
        headers: ['region', 'target', 'asked', 'with it', 'without it', 'cost', 'without it failed'],
        align: 'lllrrrl',
        breakable: [6],
        rows: withCertificate.map((r) => {
          const c = r.details!.clientCertificate!;
          return [
            r.region,
            r.target,
            r.variant.version,
            formatMs(r.details?.handshakeMs?.p50),
            formatMs(c.withoutMs?.p50),
            formatMs(c.costMs ?? undefined),
            c.withoutError?.code ?? '-',
          ];
        }),
      },
    },
  ];
}
