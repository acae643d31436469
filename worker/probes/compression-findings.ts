// The compression probe's findings: one small rule per finding code, read from the job's details
// (what each Accept-Encoding got back, the level table) and the plan's tiny-body threshold.
// COMPRESSION_RULES is the order they run in.
import { finding, type FindingRule } from '../../contracts/findings.js';
import type { EncodingRow } from '../../contracts/probes/compression.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { fmtBytes, fmtMs, percent } from '../format.js';
import { gzipLevelWaste } from '../gzip-levels.js';

export interface CompressionFindingInput {
  details: ProbeDetails<'compression'>;
  /** The plan's `tinyBytes`: bodies under it are too small to compress. */
  tinyBytes: number;
}

const TEXT_TYPE = /^(text\/|application\/([\w.+-]*\+)?(json|javascript|xml)|image\/svg\+xml)/i;
const ALREADY_COMPRESSED_TYPE =
  /^(image\/(?!svg)|video\/|audio\/|font\/woff2?|application\/(zip|gzip|x-gzip|zstd|x-7z-compressed|x-rar-compressed|x-bzip2|x-xz|pdf))/i;
/** An encoded body at least this fraction of the decoded one saved next to nothing. */
const NO_SAVING_RATIO = 0.97;

/** A 2xx answer that decoded. */
export const decodedOk = (row: EncodingRow) =>
  row.status !== undefined &&
  row.status >= 200 &&
  row.status < 300 &&
  !row.decodeError &&
  row.decodedBytes !== undefined;
/** A 2xx answer that decoded and came with a content coding. */
export const compressed = (row: EncodingRow) =>
  decodedOk(row) && row.contentEncoding !== null && row.contentEncoding.toLowerCase() !== 'identity';
const describe = (r: EncodingRow) =>
  `${r.contentEncoding} ${fmtBytes(r.encodedBytes)} (${percent(r.encodedBytes, r.decodedBytes!)})`;

/** COMPRESSION_WITHOUT_VARY: the encoding served depends on Accept-Encoding, and some answers lack Vary. */
export const compressionWithoutVary: FindingRule<CompressionFindingInput> = ({ details }, where) => {
  const answered = details.encodings.filter(decodedOk);
  const codings = new Set(answered.map((r) => r.contentEncoding?.toLowerCase() ?? 'identity'));
  const noVary = answered.filter((r) => !/(^|,)\s*(accept-encoding|\*)\s*(,|$)/i.test(r.vary ?? ''));
  if (codings.size <= 1 || noVary.length === 0) return undefined;
  return finding(
    'COMPRESSION_WITHOUT_VARY',
    where,
    `the answer's encoding depends on Accept-Encoding (${answered.map((r) => `${r.acceptEncoding} → ${r.contentEncoding ?? 'identity'}`).join(', ')}), ` +
      `but ${noVary.length} of ${answered.length} answers lack Vary: Accept-Encoding (${noVary.map((r) => `${r.acceptEncoding}: ${r.vary === null ? 'no Vary' : `Vary: ${r.vary}`}`).join(', ')})`,
    { encodingsServed: [...codings].join(','), answersWithoutVary: noVary.length },
  );
};

/** COMPRESSES_TINY_RESPONSE: a body under `tinyBytes` came compressed. */
export const compressesTinyResponse: FindingRule<CompressionFindingInput> = ({ details, tinyBytes }, where) => {
  const tiny = details.encodings.filter(compressed).filter((r) => r.decodedBytes! < tinyBytes);
  if (tiny.length === 0) return undefined;
  return finding(
    'COMPRESSES_TINY_RESPONSE',
    where,
    `${fmtBytes(tiny[0].decodedBytes!)} of ${tiny[0].contentType ?? 'body'} sent compressed: ${tiny.map(describe).join(', ')}`,
    { decodedBytes: tiny[0].decodedBytes!, encodedBytes: Math.min(...tiny.map((r) => r.encodedBytes)) },
  );
};

/** COMPRESSES_INCOMPRESSIBLE: media (by type) or a body that saved under 3% came compressed. */
export const compressesIncompressible: FindingRule<CompressionFindingInput> = ({ details, tinyBytes }, where) => {
  const wasted = details.encodings
    .filter(compressed)
    .filter(
      (r) =>
        r.decodedBytes! >= tinyBytes &&
        (ALREADY_COMPRESSED_TYPE.test(r.contentType ?? '') || r.encodedBytes >= NO_SAVING_RATIO * r.decodedBytes!),
    );
  if (wasted.length === 0) return undefined;
  return finding(
    'COMPRESSES_INCOMPRESSIBLE',
    where,
    `${fmtBytes(wasted[0].decodedBytes!)} of ${wasted[0].contentType ?? 'body'} sent compressed: ${wasted.map(describe).join(', ')}`,
    {
      decodedBytes: wasted[0].decodedBytes!,
      encodedBytes: Math.min(...wasted.map((r) => r.encodedBytes)),
      contentType: wasted[0].contentType ?? '',
    },
  );
};

/** NO_COMPRESSION_FOR_TEXT: text over `tinyBytes` came uncompressed to every Accept-Encoding, and gzip would shrink it. */
export const noCompressionForText: FindingRule<CompressionFindingInput> = ({ details, tinyBytes }, where) => {
  const answered = details.encodings.filter(decodedOk);
  const table = details.levelTable;
  const askedCompression = answered.filter((r) => r.acceptEncoding !== 'identity');
  const gzipDefault =
    table?.rows.find((r) => r.coding === 'gzip' && r.level === 6) ?? table?.rows.find((r) => r.coding === 'gzip');
  if (
    answered.some(compressed) ||
    askedCompression.length === 0 ||
    !table ||
    !gzipDefault ||
    !TEXT_TYPE.test(table.contentType ?? '') ||
    table.inputBytes < tinyBytes ||
    !(gzipDefault.ratio < 0.9)
  )
    return undefined;
  return finding(
    'NO_COMPRESSION_FOR_TEXT',
    where,
    `${fmtBytes(table.inputBytes)} of ${table.contentType} sent uncompressed to Accept-Encoding ${askedCompression.map((r) => r.acceptEncoding).join(', ')}; ` +
      `gzip level ${gzipDefault.level} makes it ${fmtBytes(gzipDefault.bytes)} (${percent(gzipDefault.bytes, table.inputBytes)}) in ${fmtMs(gzipDefault.compressMs)} here`,
    {
      decodedBytes: table.inputBytes,
      gzipBytes: gzipDefault.bytes,
      gzipLevel: gzipDefault.level,
      gzipCompressMs: gzipDefault.compressMs,
    },
  );
};

/** GZIP_LEVEL_WASTE: the server's own gzip level is high and costs it time (worker/gzip-levels.ts). */
export const serverGzipLevelWaste: FindingRule<CompressionFindingInput> = ({ details }, where) =>
  details.serverGzip ? gzipLevelWaste(where, details.serverGzip, details.samples, details.encodings) : undefined;

export const COMPRESSION_RULES: readonly FindingRule<CompressionFindingInput>[] = [
  compressionWithoutVary,
  compressesTinyResponse,
  compressesIncompressible,
  noCompressionForText,
  serverGzipLevelWaste,
];
