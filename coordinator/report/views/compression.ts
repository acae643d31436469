// The gzip tables and size chart of the HTTP performance lecture (docs/probes.md#sources): what
// each Accept-Encoding got, the level table on the decoded body, the link model, and the raw-gzip
// trap.
import type { ResultOf } from '../../../contracts/result.js';
import type { BarChart, ReportBlock, ReportSection } from '../document.js';
import { formatCount, formatMs, formatPercent } from '../format.js';
import { byPlace } from './place.js';

type CompressionResult = ResultOf<'compression'>;
type CompressionDetails = NonNullable<CompressionResult['details']>;
type EncodingMeasured = CompressionDetails['encodings'][number];
type LevelTable = NonNullable<CompressionDetails['levelTable']>;
type ServerGzip = NonNullable<CompressionDetails['serverGzip']>;

const LIBRARY_NAMES = { zlib: 'zlib 1.2 (nginx, Apache, Python)', node: "Node's zlib" } as const;

/** "level 9 of zlib 1.2 (...), exact size", or why it is unknown. */
export function describeServerGzip(s: ServerGzip): string {
  if (s.matches.length === 0) return `unknown: ${s.unknownReason ?? 'no level matches'}`;
  const size = `${formatCount(s.encodedBytes)} B, ${s.exact ? 'exact size' : 'within 1%'}`;
  // A body too small or too random to compress comes out the same at every level: nothing to tell.
  const libraries = new Set(s.matches.map((m) => m.library));
  if (s.matches.length === libraries.size * 9)
    return `any level: every level of every library gives these bytes (${size})`;
  const byLibrary = new Map<string, number[]>();
  for (const m of s.matches) byLibrary.set(m.library, [...(byLibrary.get(m.library) ?? []), m.level]);
  return `${[...byLibrary]
    .map(
      ([library, levels]) =>
        `${levels.length === 1 ? 'level' : 'levels'} ${levels.join(', ')} of ${LIBRARY_NAMES[library as keyof typeof LIBRARY_NAMES]}`,
    )
    .join(' or ')} (${size})`;
}

/** The lecture's size chart: the body unencoded, then each coding's levels. */
function levelChart(r: CompressionResult, t: LevelTable): BarChart {
  const codings = [...new Set(t.rows.map((row) => row.coding))];
  return {
    id: 'compression-level-sizes',
    title: `Size per compression level: ${r.target} from ${r.region}`,
    description: `The ${formatCount(t.inputBytes)}-byte ${t.contentType ?? 'body'} compressed here at each level (medians over each level's runs); shorter is fewer bytes on the wire.`,
    unit: 'bytes',
    groups: [
      {
        label: 'identity',
        bars: [{ label: 'unencoded', series: 'identity', value: t.inputBytes, text: `${formatCount(t.inputBytes)} B` }],
      },
      ...codings.map((coding) => ({
        label: coding,
        bars: t.rows
          .filter((row) => row.coding === coding)
          .map((row) => ({
            label: `level ${row.level}`,
            series: coding,
            value: row.bytes,
            text: `${formatCount(row.bytes)} B (${formatPercent(row.bytes, t.inputBytes)}) in ${formatMs(row.compressMs)}`,
          })),
      })),
    ],
  };
}

/** The section: every Accept-Encoding asked, then each result's level and link-model tables, then
 * the raw-gzip trap. */
export function compressionView(results: CompressionResult[]): ReportSection {
  const sorted = [...results].sort(byPlace);
  const blocks: ReportBlock[] = [encodingsTable(sorted)];
  for (const r of sorted) blocks.push(...levelBlocks(r), ...linkModelBlocks(r));
  const rawGzip = rawGzipNote(sorted);
  if (rawGzip) blocks.push(rawGzip);
  return { heading: 'Compression', blocks };
}

/** One row per Accept-Encoding asked, of every result; a note per coding some target could not be asked for. */
function encodingsTable(sorted: CompressionResult[]): ReportBlock {
  return {
    kind: 'table',
    title:
      'Compression: one row per Accept-Encoding asked (encoded = body as sent, wire = every byte read for the response)',
    table: {
      headers: [
        'region',
        'target',
        'accept',
        'status',
        'encoding',
        'encoded',
        'wire',
        'decoded',
        'ratio',
        'decode',
        'vary',
      ],
      align: 'llllrrrrrrl',
      rows: sorted.flatMap((r) => (r.details?.encodings ?? []).map((e) => encodingRow(r, e))),
    },
    notes: unavailableNotes(sorted),
  };
}

/** What one Accept-Encoding got: the coding, the bytes encoded, on the wire and decoded. */
function encodingRow(r: CompressionResult, e: EncodingMeasured): string[] {
  // A decode stopped at a limit (a decompression bomb) says how far it got, and no ratio.
  const stopped = e.decodeError !== undefined && e.decodedBytes !== undefined;
  return [
    r.region,
    r.target,
    e.acceptEncoding,
    e.status === undefined ? '-' : String(e.status),
    e.decodeError
      ? `${e.contentEncoding} (${stopped ? 'decoding stopped' : 'undecodable'})`
      : (e.contentEncoding ?? '-'),
    formatCount(e.encodedBytes),
    formatCount(e.wireBytes),
    stopped ? `> ${formatCount(e.decodedBytes)}` : formatCount(e.decodedBytes),
    e.decodeError ? '-' : formatPercent(e.encodedBytes, e.decodedBytes),
    formatMs(e.decodeMs),
    e.vary ?? '-',
  ];
}

/** "not measured for api, assets: br: ...": each coding a probe could not ask for, once, with the targets it missed. */
function unavailableNotes(sorted: CompressionResult[]): string[] {
  const targetsByReason = new Map<string, Set<string>>();
  for (const r of sorted)
    for (const u of r.details?.unavailable ?? []) {
      const why = `${u.encoding}: ${u.reason}`;
      targetsByReason.set(why, (targetsByReason.get(why) ?? new Set()).add(r.target));
    }
  return [...targetsByReason].map(([why, targets]) => `not measured for ${[...targets].join(', ')}: ${why}`);
}

/** The level chart and table of one result, when it measured levels. */
function levelBlocks(r: CompressionResult): ReportBlock[] {
  const t = r.details?.levelTable;
  if (!t || t.rows.length === 0) return [];
  const serverGzip = r.details?.serverGzip;
  return [
    { kind: 'chart', chart: levelChart(r, t) },
    {
      kind: 'table',
      title: `Level table for ${r.target} (${r.region}): what each level would give, ${formatCount(t.inputBytes)} B of ${t.contentType ?? 'body'} compressed here (Node's zlib), medians over each row's runs`,
      table: {
        headers: ['coding', 'level', 'bytes', 'ratio', 'compress', 'decompress', 'runs'],
        align: 'lrrrrrr',
        rows: t.rows.map((row) => [
          row.coding,
          String(row.level),
          formatCount(row.bytes),
          formatPercent(row.bytes, t.inputBytes),
          formatMs(row.compressMs),
          formatMs(row.decompressMs),
          String(row.runs),
        ]),
      },
      notes: serverGzip ? [`the server's own gzip: ${describeServerGzip(serverGzip)}`] : [],
    },
  ];
}

/** The link model table of one result, when it has one. */
function linkModelBlocks(r: CompressionResult): ReportBlock[] {
  const linkModel = r.details?.linkModel ?? [];
  if (linkModel.length === 0) return [];
  return [
    {
      kind: 'table',
      title: `Link model for ${r.target} (${r.region}): server compression (its extra time to first byte) + transfer at the link speed + decode here`,
      table: {
        headers: ['link', 'encoding', 'wire bytes', 'compress', 'transfer', 'decode', 'total'],
        align: 'llrrrrr',
        rows: linkModel.flatMap((m) =>
          m.rows.map((row) => [
            `${m.linkMBps} MB/s`,
            row.contentEncoding ?? 'identity',
            formatCount(row.wireBytes),
            formatMs(row.compressMs),
            formatMs(row.transferMs),
            formatMs(row.decodeMs),
            formatMs(row.totalMs),
          ]),
        ),
      },
      notes: linkModel.map((m) => `at ${m.linkMBps} MB/s: ${m.recommendation}`),
    },
  ];
}

/** The raw-gzip trap, explained once with this run's bytes, when a target sent gzip. */
function rawGzipNote(sorted: CompressionResult[]): ReportBlock | undefined {
  const rawGzip = sorted.flatMap((r) => {
    const row = r.details?.encodings.find(
      (e) => e.contentEncoding?.toLowerCase() === 'gzip' && e.firstBytesHex.startsWith('1f8b'),
    );
    return row ? [{ target: r.target, row }] : [];
  });
  if (rawGzip.length === 0) return undefined;
  const { row } = rawGzip[0];
  // Each target's own content type: what a client that does not decode fails to get.
  const types = [...new Set(rawGzip.map((g) => g.row.contentType ?? 'body'))];
  return {
    kind: 'text',
    text:
      `Raw gzip: asked for gzip, ${rawGzip.map((g) => `${g.target} (${g.row.contentType ?? 'body'})`).join(', ')} sent bodies starting ${row.firstBytesHex.match(/../g)!.join(' ')}. ` +
      `A client that sends Accept-Encoding: gzip but does not decode (curl -H 'Accept-Encoding: gzip' without --compressed) ` +
      `gets exactly these bytes, not the ${types.length === 1 ? types[0] : 'decoded body'}.`,
  };
}
