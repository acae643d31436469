// The lecture's gzip tables: what each Accept-Encoding got, the level table on the decoded
// body, the link model, and the raw-gzip trap.
import type { ResultOf } from '../../../contracts/result.js';
import { formatCount, formatMs, formatPercent } from '../format.js';
import { renderTable } from '../table.js';

const byPlace = (a: ResultOf<'compression'>, b: ResultOf<'compression'>) => a.region.localeCompare(b.region) || a.target.localeCompare(b.target);

export function compressionSection(results: ResultOf<'compression'>[]): string {
  const sorted = [...results].sort(byPlace);
  const out = [
    'Compression: one row per Accept-Encoding asked (encoded = body as sent, wire = every byte read for the response)',
    renderTable(
      ['region', 'target', 'accept', 'status', 'encoding', 'encoded', 'wire', 'decoded', 'ratio', 'decode', 'vary'],
      sorted.flatMap((r) =>
        (r.details?.encodings ?? []).map((e) => [
          r.region,
          r.target,
          e.acceptEncoding,
          e.status === undefined ? '-' : String(e.status),
          e.decodeError ? `${e.contentEncoding} (undecodable)` : (e.contentEncoding ?? '-'),
          formatCount(e.encodedBytes),
          formatCount(e.wireBytes),
          formatCount(e.decodedBytes),
          formatPercent(e.encodedBytes, e.decodedBytes),
          formatMs(e.decodeMs),
          e.vary ?? '-',
        ]),
      ),
      'llllrrrrrrl',
    ),
  ];

  for (const r of sorted) {
    const d = r.details;
    if (!d) continue;
    const where = `${r.target} (${r.region})`;
    if (d.levelTable && d.levelTable.rows.length > 0) {
      const t = d.levelTable;
      out.push(
        '',
        `Level table for ${where}: ${formatCount(t.inputBytes)} B of ${t.contentType ?? 'body'} compressed here, medians over each row's runs`,
        renderTable(
          ['coding', 'level', 'bytes', 'ratio', 'compress', 'decompress', 'runs', ''],
          t.rows.map((row) => [
            row.coding,
            String(row.level),
            formatCount(row.bytes),
            formatPercent(row.bytes, t.inputBytes),
            formatMs(row.compressMs),
            formatMs(row.decompressMs),
            String(row.runs),
            row.coding === 'gzip' && row.level === t.serverGzipLevel ? "<- the server's gzip" : '',
          ]),
          'lrrrrrrl',
        ),
      );
    }
    if (d.linkModel.length > 0) {
      out.push(
        '',
        `Link model for ${where}: server compression (its extra time to first byte) + transfer at the link speed + decode here`,
        renderTable(
          ['link', 'encoding', 'wire bytes', 'compress', 'transfer', 'decode', 'total'],
          d.linkModel.flatMap((m) =>
            m.rows.map((row) => [`${m.linkMBps} MB/s`, row.contentEncoding ?? 'identity', formatCount(row.wireBytes), formatMs(row.compressMs), formatMs(row.transferMs), formatMs(row.decodeMs), formatMs(row.totalMs)]),
          ),
          'llrrrrr',
        ),
        ...d.linkModel.map((m) => `  at ${m.linkMBps} MB/s: ${m.recommendation}`),
      );
    }
  }

  // The raw-gzip trap, explained once with this run's bytes.
  const rawGzip = sorted.flatMap((r) => {
    const row = r.details?.encodings.find((e) => e.contentEncoding?.toLowerCase() === 'gzip' && e.firstBytesHex.startsWith('1f8b'));
    return row ? [{ target: r.target, row }] : [];
  });
  if (rawGzip.length > 0) {
    const { row } = rawGzip[0];
    out.push(
      '',
      `Raw gzip: asked for gzip, ${rawGzip.map((g) => g.target).join(', ')} sent bodies starting ${row.firstBytesHex.match(/../g)!.join(' ')}. ` +
        `A client that sends Accept-Encoding: gzip but does not decode (curl -H 'Accept-Encoding: gzip' without --compressed) ` +
        `gets exactly these bytes, not the ${row.contentType ?? 'body'}.`,
    );
  }
  const unavailable = new Map<string, Set<string>>();
  for (const r of sorted) for (const u of r.details?.unavailable ?? []) unavailable.set(`${u.encoding}: ${u.reason}`, (unavailable.get(`${u.encoding}: ${u.reason}`) ?? new Set()).add(r.target));
  for (const [why, targets] of unavailable) out.push(`  not measured for ${[...targets].join(', ')}: ${why}`);
  return out.join('\n');
}
