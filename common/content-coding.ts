// HTTP content codings with node:zlib: one place that knows how to compress and decode gzip,
// br and zstd at a level, used by the lab (to serve them) and the compression probe (to decode
// what arrived and to build the level table). zstd exists in node:zlib from Node 22.15 on;
// on older runtimes it is reported as unavailable, never faked. Nothing here decodes without a
// cap on its output: a body a target sent is decoded as a stream (`decodeCapped`).
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';

export const CONTENT_CODINGS = ['gzip', 'br', 'zstd'] as const;
export type ContentCoding = (typeof CONTENT_CODINGS)[number];

/** node:zlib's zstd functions, absent from Node 20's runtime and its type definitions. */
interface ZstdZlib {
  zstdCompressSync?: (buf: Buffer, options?: { params?: Record<number, number> }) => Buffer;
  zstdDecompressSync?: (buf: Buffer, options?: { maxOutputLength?: number }) => Buffer;
  createZstdDecompress?: () => Transform;
  constants: { ZSTD_c_compressionLevel?: number };
}
const zstd = zlib as unknown as ZstdZlib;

export const ZSTD_AVAILABLE =
  typeof zstd.zstdCompressSync === 'function' &&
  typeof zstd.zstdDecompressSync === 'function' &&
  typeof zstd.createZstdDecompress === 'function';

/** Why a coding cannot be used in this process, or undefined when it can. */
export function codingUnavailable(coding: ContentCoding): string | undefined {
  return coding === 'zstd' && !ZSTD_AVAILABLE
    ? `node:zlib in Node ${process.versions.node} has no zstd (Node 22.15 or newer has)`
    : undefined;
}

/** The levels each coding accepts, and the level a server would use without being told. */
export const CODING_LEVELS: Record<ContentCoding, { min: number; max: number; default: number }> = {
  gzip: { min: 1, max: 9, default: 6 },
  br: { min: 0, max: 11, default: 5 },
  zstd: { min: 1, max: 22, default: 3 },
};

export function compress(coding: ContentCoding, input: Buffer, level: number): Buffer {
  switch (coding) {
    case 'gzip':
      return zlib.gzipSync(input, { level });
    case 'br':
      return zlib.brotliCompressSync(input, {
        params: { [zlib.constants.BROTLI_PARAM_QUALITY]: level, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: input.length },
      });
    case 'zstd':
      if (!zstd.zstdCompressSync) throw new Error(codingUnavailable('zstd'));
      return zstd.zstdCompressSync(input, { params: { [zstd.constants.ZSTD_c_compressionLevel!]: level } });
  }
}

/** Decodes what `compress` made here, whose size is known: past `maxOutputLength` it throws
 * (RangeError, ERR_BUFFER_TOO_LARGE) rather than allocate more. */
export function decompress(coding: ContentCoding, input: Buffer, maxOutputLength: number): Buffer {
  switch (coding) {
    case 'gzip':
      return zlib.gunzipSync(input, { maxOutputLength });
    case 'br':
      return zlib.brotliDecompressSync(input, { maxOutputLength });
    case 'zstd':
      if (!zstd.zstdDecompressSync) throw new Error(codingUnavailable('zstd'));
      return zstd.zstdDecompressSync(input, { maxOutputLength });
  }
}

function decoder(coding: ContentCoding): Transform {
  switch (coding) {
    case 'gzip':
      // Like browsers and curl, a body of several gzip members decodes to all of them.
      return zlib.createGunzip();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      if (!zstd.createZstdDecompress) throw new Error(codingUnavailable('zstd'));
      return zstd.createZstdDecompress();
  }
}

export interface DecodeLimits {
  /** Decoding stops once it has made more than this many bytes. */
  maxBytes: number;
  /** ... or more than this many bytes per encoded byte consumed, once past RATIO_FLOOR_BYTES. */
  maxRatio: number;
  /** Decoded bytes kept in memory, from the start; the rest is counted, never held. */
  keepBytes: number;
}

/** A ratio check below this many decoded bytes would only catch bodies too small to hurt. */
export const RATIO_FLOOR_BYTES = 1 << 20;

export interface DecodeOutcome {
  /** The first `keepBytes` decoded bytes. */
  kept: Buffer;
  /** Bytes decoded in all, up to where decoding stopped. */
  decodedBytes: number;
  /** Encoded bytes the decoder had consumed by then. */
  consumedBytes: number;
  /** Why decoding stopped before the end of the body: past `maxBytes`, or past `maxRatio`. */
  stopped?: 'size' | 'ratio';
}

/**
 * Decodes a body a target sent, as a stream, within `limits`: a decompression bomb (1 MB of gzip
 * that decodes to 1 GiB, 1.6 KB of brotli that does the same) costs at most `keepBytes` of
 * memory and `maxBytes` of decoding. Rejects when the body does not decode.
 */
export function decodeCapped(coding: ContentCoding, input: Buffer, limits: DecodeLimits): Promise<DecodeOutcome> {
  return new Promise((resolve, reject) => {
    const stream = decoder(coding) as Transform & { bytesWritten: number };
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let decodedBytes = 0;
    let settled = false;
    const finish = (stopped?: DecodeOutcome['stopped']) => {
      if (settled) return;
      settled = true;
      if (stopped) stream.destroy();
      resolve({
        kept: Buffer.concat(kept, keptBytes),
        decodedBytes,
        consumedBytes: stream.bytesWritten,
        ...(stopped ? { stopped } : {}),
      });
    };
    stream.on('data', (chunk: Buffer) => {
      if (settled) return;
      decodedBytes += chunk.length;
      if (keptBytes < limits.keepBytes) {
        const part = chunk.subarray(0, limits.keepBytes - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      if (decodedBytes > limits.maxBytes) finish('size');
      else if (decodedBytes > RATIO_FLOOR_BYTES && decodedBytes > limits.maxRatio * Math.max(1, stream.bytesWritten))
        finish('ratio');
    });
    stream.on('end', () => finish());
    stream.on('error', (err) => {
      if (settled) return;
      settled = true;
      reject(err);
    });
    stream.end(input);
  });
}

export function isContentCoding(value: string): value is ContentCoding {
  return (CONTENT_CODINGS as readonly string[]).includes(value);
}

/** The magic bytes a gzip stream starts with: what a client that asks for gzip but does not decode sees. */
export const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);
