// Which gzip level the server itself used, and whether it wastes CPU on it. Servers link different
// deflate implementations: nginx, Apache and Python the system's zlib 1.2 (reproduced byte for byte
// by pako 2.1, a port of it), Node servers Node's own zlib (Chromium's fork, whose output differs by
// up to a few per cent at the same level). The decoded body is compressed at every level of each,
// and the levels whose size matches the server's encoded body are the server's. GZIP_LEVEL_WASTE
// is then judged from the server's own measured time to first byte, not from this machine's CPU.
import { performance } from 'node:perf_hooks';
import zlib from 'node:zlib';
import pako from 'pako';
import type { RequestSample } from '../contracts/common.js';
import { finding, type Finding } from '../contracts/findings.js';
import type { AcceptEncoding, EncodingRow, ServerGzip } from '../contracts/probes/compression.js';
import { medianDifference } from '../common/stats.js';
import { fmtBytes, fmtMs } from './format.js';

export const GZIP_LIBRARIES = {
  zlib: 'zlib 1.2 (nginx, Apache, Python)',
  node: `Node's zlib ${process.versions.zlib}`,
} as const;
type Library = keyof typeof GZIP_LIBRARIES;
type PakoLevel = NonNullable<pako.DeflateFunctionOptions['level']>;

/** A size this close to a level's (fraction of the served bytes) still names it, when none is exact. */
export const SIZE_TOLERANCE = 0.01;
/** Bodies larger than this are not compressed nine times over to find a level. */
const MAX_IDENTIFY_BYTES = 4 << 20;
/** GZIP_LEVEL_WASTE: the server's level costs at least this many times level 6's CPU ... */
const WASTE_CPU_FACTOR = 2.5;
/** ... for at most this fraction of bytes saved. */
const WASTE_MAX_SAVING = 0.08;
const TIMING_RUNS = 5;

/** The gzip header (10 bytes) and trailer (8) around deflate's output, as nginx and zlib write them. */
const GZIP_FRAME_BYTES = 18;

/**
 * deflate's window and memory level as nginx sets them for a body of known length: smaller
 * for small bodies (ngx_http_gzip_filter_module.c), which changes the output.
 */
function nginxWindow(length: number): { windowBits: number; memLevel: number } {
  let windowBits = 15;
  let memLevel = 8;
  while (length < (1 << (windowBits - 1)) - 262 && windowBits > 9) {
    windowBits--;
    memLevel--;
  }
  return { windowBits, memLevel: Math.max(memLevel, 1) };
}

function gzipSize(library: Library, body: Buffer, level: number, window?: { windowBits: number; memLevel: number }) {
  if (library === 'node') return zlib.gzipSync(body, { level }).length;
  return pako.deflateRaw(body, { level: level as PakoLevel, ...window }).length + GZIP_FRAME_BYTES;
}

/**
 * The levels of each library whose size matches the server's encoded body: exact sizes if any,
 * else within SIZE_TOLERANCE; for a level above 6, level 6's size and CPU beside it. Up to 27
 * compressions of up to 4 MiB, synchronous: it runs in the compression probe's CPU thread
 * (worker/cpu-tasks.ts), which the job's bound stops.
 */
export function identifyServerGzip(decoded: Buffer, encodedBytes: number): ServerGzip {
  if (decoded.length > MAX_IDENTIFY_BYTES)
    return { encodedBytes, matches: [], exact: false, unknownReason: `the body is over ${MAX_IDENTIFY_BYTES} bytes` };
  const candidates: { library: Library; level: number; bytes: number }[] = [];
  const windows = [undefined, nginxWindow(decoded.length)];
  for (const library of Object.keys(GZIP_LIBRARIES) as Library[]) {
    for (let level = 1; level <= 9; level++) {
      const sizes = new Set(
        library === 'zlib'
          ? windows.map((w) => gzipSize(library, decoded, level, w))
          : [gzipSize(library, decoded, level)],
      );
      for (const bytes of sizes) candidates.push({ library, level, bytes });
    }
  }
  const exact = candidates.filter((c) => c.bytes === encodedBytes);
  const near = candidates.filter((c) => Math.abs(c.bytes - encodedBytes) <= SIZE_TOLERANCE * encodedBytes);
  const matches = exact.length > 0 ? exact : near;
  const distinct = matches.filter(
    (m, i) => matches.findIndex((o) => o.library === m.library && o.level === m.level) === i,
  );
  const lowest = distinct.length > 0 ? distinct.reduce((a, b) => (b.level < a.level ? b : a)) : undefined;
  return {
    encodedBytes,
    matches: distinct,
    exact: exact.length > 0,
    ...(distinct.length === 0
      ? {
          unknownReason: `no level of ${Object.values(GZIP_LIBRARIES).join(' or ')} gives ${encodedBytes} B within ${SIZE_TOLERANCE * 100}%`,
        }
      : {}),
    ...(lowest && lowest.level > 6
      ? {
          level6: {
            bytes: gzipSize(lowest.library, decoded, 6),
            cpuFactor: cpuFactorOverLevel6(lowest.library, decoded, lowest.level),
          },
        }
      : {}),
  };
}

/** "level 9", "levels 7-9". */
export function describeLevels(levels: number[]): string {
  const sorted = [...new Set(levels)].sort((a, b) => a - b);
  if (sorted.length === 1) return `level ${sorted[0]}`;
  return `levels ${sorted[0]}-${sorted.at(-1)}`;
}

/**
 * How many times level 6's CPU the given level costs here: the fastest of a few runs of each (other
 * work on the machine only ever adds time to a CPU-bound step), the two levels taken in turn so a
 * busy spell slows both rather than one.
 */
function cpuFactorOverLevel6(library: Library, body: Buffer, level: number): number {
  const fastest = { level: Infinity, level6: Infinity };
  const timed = (l: number) => {
    const start = performance.now();
    if (library === 'node') zlib.gzipSync(body, { level: l });
    else pako.deflateRaw(body, { level: l as PakoLevel });
    return performance.now() - start;
  };
  for (let i = 0; i < TIMING_RUNS; i++) {
    fastest.level = Math.min(fastest.level, timed(level));
    fastest.level6 = Math.min(fastest.level6, timed(6));
  }
  return fastest.level / fastest.level6;
}

/**
 * GZIP_LEVEL_WASTE: the server's own level (every matching one) is above 6, it compresses on the
 * fly (its time to first byte for gzip is above identity's, the bootstrap interval clear of 0),
 * and level 6 of the same library would cost a fraction of the CPU for at most 8% more bytes.
 */
export function gzipLevelWaste(
  where: { region: string; target: string; probe: string },
  server: ServerGzip,
  samples: (RequestSample & { acceptEncoding: AcceptEncoding })[],
  rows: EncodingRow[],
): Finding | undefined {
  if (!server.level6 || server.matches.length === 0 || Math.min(...server.matches.map((m) => m.level)) <= 6)
    return undefined;
  const gzipRow = rows.find((r) => r.acceptEncoding === 'gzip');
  const identityRow = rows.find((r) => r.acceptEncoding === 'identity' && r.contentEncoding === null);
  if (!gzipRow || !identityRow) return undefined;
  const ttfb = (encoding: AcceptEncoding) =>
    samples.flatMap((s) =>
      s.acceptEncoding === encoding && !s.error && s.phases.processing !== undefined ? [s.phases.processing] : [],
    );
  const [identity, gzip] = [ttfb('identity'), ttfb('gzip')];
  if (identity.length < 2 || gzip.length < 2) return undefined;
  const extra = medianDifference(identity, gzip);
  if (extra.ci95[0] <= 0) return undefined; // pre-compressed, or too close to call
  const { library, level, bytes } = server.matches.reduce((a, b) => (b.level < a.level ? b : a));
  const { bytes: level6Bytes, cpuFactor } = server.level6;
  const saving = (level6Bytes - bytes) / level6Bytes;
  if (cpuFactor < WASTE_CPU_FACTOR || saving > WASTE_MAX_SAVING) return undefined;
  return finding(
    'GZIP_LEVEL_WASTE',
    where,
    `the server's gzip answer is ${describeLevels(server.matches.map((m) => m.level))} (${fmtBytes(bytes)}, ${GZIP_LIBRARIES[library]}${server.exact ? ', exact size' : ''}); ` +
      `it adds ${fmtMs(extra.median)} to the time to first byte over identity (95% CI ${fmtMs(extra.ci95[0])} to ${fmtMs(extra.ci95[1])}); ` +
      `level 6 sends ${fmtBytes(level6Bytes)} (${(saving * 100).toFixed(1)}% more) for ${cpuFactor.toFixed(1)}x less CPU here, about ${fmtMs(extra.median / cpuFactor)} at the server's pace`,
    {
      serverLevel: level,
      library,
      serverExtraTtfbMs: extra.median,
      level6Bytes,
      servedBytes: bytes,
      cpuFactor,
    },
  );
}
