// The lecture's HTTP/2 section, measured: header bytes per request over HTTP/1.1 and HTTP/2
// (first request and repeats), what the server negotiated, and N concurrent requests over
// one HTTP/2 connection against a browser-sized HTTP/1.1 pool.
import type { H2cAttempt } from '../../../contracts/probes/http2.js';
import type { ResultOf } from '../../../contracts/result.js';
import { formatMs } from '../format.js';
import { renderTable } from '../table.js';

const bytes = (b: { request: number; response: number } | null | undefined) => (b ? `${b.request} / ${b.response} B` : '-');
const yesNo = (attempt: H2cAttempt | null | undefined) => (attempt ? (attempt.supported ? 'yes' : 'no') : '-');

export function http2Section(results: ResultOf<'http2'>[]): string {
  const sorted = [...results].sort((a, b) => a.region.localeCompare(b.region) || a.target.localeCompare(b.target));
  const headerRows = sorted.map((r) => {
    const d = r.details;
    return [
      r.region,
      r.target,
      d?.alpn ? (d.alpn.selected ?? 'none') : '-',
      bytes(d?.h1HeaderBytes),
      bytes(d?.h2HeaderBytesFirst),
      bytes(d?.h2HeaderBytesRepeat),
      yesNo(d?.h2cPriorKnowledge),
      yesNo(d?.h2cUpgrade),
    ];
  });
  const muxRows = sorted.map((r) => {
    const m = r.details?.multiplexing;
    return [
      r.region,
      r.target,
      String(m?.requests ?? '-'),
      m?.h1 ? String(m.h1.connectionsOpened) : '-',
      formatMs(m?.h1?.totalMs),
      m?.h2 ? String(m.h2.connectionsOpened) : '-',
      formatMs(m?.h2?.totalMs),
      String(r.summary.errors),
    ];
  });
  const answers = sorted.flatMap((r) =>
    [
      r.details?.h2cPriorKnowledge && `  ${r.region} ${r.target}, h2c prior knowledge: ${r.details.h2cPriorKnowledge.answer}`,
      r.details?.h2cUpgrade && `  ${r.region} ${r.target}, Upgrade: h2c: ${r.details.h2cUpgrade.answer}`,
    ].filter((line): line is string => Boolean(line)),
  );
  return [
    'HTTP/1.1 vs HTTP/2: header bytes per request (request / response; h2 = HEADERS frames, repeat = median of the requests after the first)',
    renderTable(['region', 'target', 'alpn', 'h1.1 heads', 'h2 first', 'h2 repeat', 'h2c prior knowledge', 'h2c upgrade'], headerRows, 'lllrrrll'),
    ...(answers.length > 0 ? ['', 'What the servers answered to h2c', ...answers] : []),
    '',
    'Concurrent requests: HTTP/1.1 (a browser-sized pool) vs one HTTP/2 connection, connecting included',
    renderTable(['region', 'target', 'requests', 'h1.1 conns', 'h1.1 total', 'h2 conns', 'h2 total', 'errors'], muxRows, 'llrrrrrr'),
  ].join('\n');
}
