// HTTP content codings with node:zlib: one place that knows how to compress and decode gzip,
// br and zstd at a level, used by the lab (to serve them) and the compression probe (to decode
// what arrived and to build the level table). zstd exists in node:zlib from Node 22.15 on;
// on older runtimes it is reported as unavailable, never faked.
import zlib from 'node:zlib';

export const CONTENT_CODINGS = ['gzip', 'br', 'zstd'] as const;
export type ContentCoding = (typeof CONTENT_CODINGS)[number];

/** node:zlib's zstd functions, absent from Node 20's runtime and its type definitions. */
interface ZstdZlib {
  zstdCompressSync?: (buf: Buffer, options?: { params?: Record<number, number> }) => Buffer;
  zstdDecompressSync?: (buf: Buffer) => Buffer;
  constants: { ZSTD_c_compressionLevel?: number };
}
const zstd = zlib as unknown as ZstdZlib;

export const ZSTD_AVAILABLE =
  typeof zstd.zstdCompressSync === 'function' && typeof zstd.zstdDecompressSync === 'function';

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

export function decompress(coding: ContentCoding, input: Buffer): Buffer {
  switch (coding) {
    case 'gzip':
      return zlib.gunzipSync(input);
    case 'br':
      return zlib.brotliDecompressSync(input);
    case 'zstd':
      if (!zstd.zstdDecompressSync) throw new Error(codingUnavailable('zstd'));
      return zstd.zstdDecompressSync(input);
  }
}

export function isContentCoding(value: string): value is ContentCoding {
  return (CONTENT_CODINGS as readonly string[]).includes(value);
}

/** The magic bytes a gzip stream starts with: what a client that asks for gzip but does not decode sees. */
export const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);
