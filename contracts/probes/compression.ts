// The `compression` probe: is compression worth it for this response and link?
import { z } from 'zod';
import { distinct, requestSampleSchema } from '../common.js';
import { JOB_LIMITS } from '../limits.js';
import { defineProbe, schemeOf, sequential } from './define.js';

/** What the probe may ask for in Accept-Encoding; zstd is measured only where the runtime has it. */
export const ACCEPT_ENCODINGS = ['identity', 'gzip', 'br', 'zstd'] as const;
export type AcceptEncoding = (typeof ACCEPT_ENCODINGS)[number];
export const LEVEL_TABLE_CODINGS = ['gzip', 'br', 'zstd'] as const;

const levels = (min: number, max: number, fallback: number[]) =>
  z.array(z.int().min(min).max(max)).max(12).default(fallback);

/** One Accept-Encoding asked for: what came back, over `requests` requests. */
export const encodingRowSchema = z.strictObject({
  acceptEncoding: z.enum(ACCEPT_ENCODINGS),
  /** Requests that were answered (with any status). */
  answered: z.int().nonnegative(),
  status: z.int().optional(),
  /** The Content-Encoding of the answer; null when the body came unencoded. */
  contentEncoding: z.string().nullable(),
  contentType: z.string().nullable(),
  vary: z.string().nullable(),
  /** Body bytes as sent, before decoding (curl's size_download). */
  encodedBytes: z.int().nonnegative(),
  /** Every byte of the response read from the TCP connection: status line, headers, framing, body (and TLS records on https). */
  wireBytes: z.int().nonnegative().optional(),
  decodedBytes: z.int().nonnegative().optional(),
  /** Median time to decode the body here (0 for an unencoded body). */
  decodeMs: z.number().nonnegative().optional(),
  /** Median time to first byte of the response, from the request being written. */
  processingMs: z.number().nonnegative().optional(),
  /** First bytes of the body as sent, hex: "1f8b..." is raw gzip, what a client that does not decode sees. */
  firstBytesHex: z.string(),
  /** Why the body could not be decoded (to its end), when it could not; `decodedBytes` then says how far it got. */
  decodeError: z.string().optional(),
});
export type EncodingRow = z.infer<typeof encodingRowSchema>;

export const levelRowSchema = z.strictObject({
  coding: z.enum(LEVEL_TABLE_CODINGS),
  level: z.int(),
  bytes: z.int().nonnegative(),
  /** bytes / input bytes. */
  ratio: z.number().nonnegative(),
  compressMs: z.number().nonnegative(),
  decompressMs: z.number().nonnegative(),
  /** Repetitions the medians are over (bounded in count and time). */
  runs: z.int().positive(),
});
export type LevelRow = z.infer<typeof levelRowSchema>;

/** The server's own gzip level, found by matching its encoded size against every level of each library. */
export const serverGzipSchema = z.strictObject({
  /** The gzip body as the server sent it. */
  encodedBytes: z.int().nonnegative(),
  /** The library levels whose size matches: exact sizes when any is, else those within 1%. Empty: unknown. */
  matches: z.array(
    z.strictObject({
      /** `zlib`: zlib 1.2 as nginx, Apache and Python link it (pako 2.1); `node`: Node's own zlib. */
      library: z.enum(['zlib', 'node']),
      level: z.int().min(1).max(9),
      bytes: z.int().nonnegative(),
    }),
  ),
  exact: z.boolean(),
  /** Why no level matched. */
  unknownReason: z.string().optional(),
  /** When the lowest matching level is above 6: level 6 of the same library on the same body, its
   * size and how many times less CPU it takes here (GZIP_LEVEL_WASTE weighs the two). */
  level6: z.strictObject({ bytes: z.int().nonnegative(), cpuFactor: z.number().positive() }).optional(),
});
export type ServerGzip = z.infer<typeof serverGzipSchema>;

export const linkRowSchema = z.strictObject({
  acceptEncoding: z.enum(ACCEPT_ENCODINGS),
  contentEncoding: z.string().nullable(),
  wireBytes: z.int().nonnegative(),
  /** The server's extra time to first byte over identity (its compression), floored at 0. */
  compressMs: z.number().nonnegative(),
  transferMs: z.number().nonnegative(),
  decodeMs: z.number().nonnegative(),
  totalMs: z.number().nonnegative(),
});

export const compressionProbe = defineProbe({
  kind: 'compression',
  summary: 'Bytes on the wire and decode time per Accept-Encoding, Vary, a local level table, and a link model',
  question: 'is compression worth it for this response and link?',
  jobs: 'one job per target; parameters `encodings` (identity, gzip, br, zstd), `requests`, `gzipLevels`, `brotliLevels`, `zstdLevels`, `repetitions`, `linkSpeedsMBps`, `tinyBytes`, `maxDecodedBytes`, `maxDecodeRatio`: see [Compression, CORS and drain](probes.md#compression-cors-and-drain)',
  findings: {
    COMPRESSION_WITHOUT_VARY: {
      severity: 'warning',
      title: 'Compressed responses without Vary: Accept-Encoding',
      situation: 'The encoding depends on Accept-Encoding, but responses lack Vary: Accept-Encoding',
      advice:
        'Send Vary: Accept-Encoding on every response whose encoding depends on the request, so caches keep the versions apart',
      when: 'the encoding of the answer depends on Accept-Encoding, and an answer lacks `Vary: Accept-Encoding`',
    },
    COMPRESSES_TINY_RESPONSE: {
      severity: 'info',
      title: 'Tiny responses are compressed, and grow',
      situation: 'Tiny responses (under about 1 KB) are compressed',
      advice:
        'Skip compression under about 1 KB (e.g. nginx gzip_min_length 1024): the gzip header and trailer alone make them bigger',
      when: 'a body under `tinyBytes` (1 KB) came back compressed',
    },
    COMPRESSES_INCOMPRESSIBLE: {
      severity: 'warning',
      title: 'Already-compressed bodies are compressed again',
      situation: 'Images, video, ZIP and other already-compressed bodies are compressed again',
      advice:
        'Compress text types only (HTML, CSS, JS, JSON, SVG, XML); already-compressed media gain nothing and cost CPU',
      when: 'a body of an already-compressed type (image, video, audio, zip, ...) or one that shrank by less than 3% came back compressed',
    },
    NO_COMPRESSION_FOR_TEXT: {
      severity: 'warning',
      title: 'Text over 1 KB is sent uncompressed to clients that accept compression',
      situation: 'JSON, HTML, CSS or JS over 1 KB is sent uncompressed',
      advice: 'Enable gzip at level 6 (or brotli) for text types, or pre-compress static files at deploy time',
      when: 'text (JSON, HTML, CSS, JS, XML, SVG) of 1 KB or more came back unencoded to every Accept-Encoding asked, and gzip would save over 10%',
    },
    GZIP_LEVEL_WASTE: {
      severity: 'info',
      title: 'A high gzip level costs several times the CPU for a few per cent of bytes',
      situation: 'The server compresses on the fly with a high gzip level',
      advice:
        'Use gzip level 6 for on-the-fly compression; keep the highest levels for files compressed once at deploy time',
      when: "the server's own gzip level (every level whose size matches its body, see [probes.md](probes.md#the-servers-own-gzip-level)) is above 6, its time to first byte for gzip exceeds identity's (bootstrap 95% interval above 0: it compresses on the fly), and level 6 of the same library costs 2.5 times less CPU here for at most 8% more bytes",
    },
  },
  params: z.strictObject({
    /** Accept-Encoding values asked for, one at a time. */
    encodings: distinct(z.array(z.enum(ACCEPT_ENCODINGS)).min(1), 'encoding').default([
      'identity',
      'gzip',
      'br',
      'zstd',
    ]),
    /** Requests per encoding (interleaved), for the medians. */
    requests: z.int().min(1).max(100).default(5),
    /** Levels of the local level table, on the decoded body. */
    gzipLevels: levels(1, 9, [1, 6, 9]),
    brotliLevels: levels(0, 11, [1, 5, 11]),
    zstdLevels: levels(1, 22, [1, 3, 19]),
    /** Compress and decompress runs per level for the medians; each level stops after about a second. */
    repetitions: z.int().min(1).max(200).default(20),
    /** Link speeds of the link model, in MB/s (10^6 bytes per second); at least 1 kB/s, so that a transfer time is a number. */
    linkSpeedsMBps: z.array(z.number().min(0.001).max(100_000)).min(1).max(10).default([1, 100]),
    /** Bodies under this many bytes are "tiny": compressing them adds bytes. */
    tinyBytes: z
      .int()
      .min(1)
      .max(1 << 20)
      .default(1024),
    /** Per-request time bound. */
    timeoutMs: z.int().min(1).max(120_000).default(10_000),
    /** A body that decodes to more than this many bytes ends the job (DECODED_BODY_TOO_LARGE):
     * decoding stops there. At most JOB_LIMITS.decodedBytes. */
    maxDecodedBytes: z
      .int()
      .min(1024)
      .max(JOB_LIMITS.decodedBytes)
      .default(32 << 20),
    /** A body that decodes to more than this many bytes per encoded byte, once past 1 MiB decoded,
     * ends the job (DECODE_RATIO_TOO_HIGH): a decompression bomb. gzip cannot pass about 1032. */
    maxDecodeRatio: z.number().min(10).max(1_000_000).default(1000),
  }),
  variant: z.strictObject({ scheme: z.enum(['http', 'https']) }),
  details: z.strictObject({
    encodings: z.array(encodingRowSchema),
    /** Encodings asked for that this runtime cannot decode (zstd before Node 22.15), with why. */
    unavailable: z.array(z.strictObject({ encoding: z.enum(ACCEPT_ENCODINGS), reason: z.string() })),
    levelTable: z
      .strictObject({
        /** Bytes compressed: the decoded body, or its first 4 MiB. */
        inputBytes: z.int().nonnegative(),
        contentType: z.string().nullable(),
        rows: z.array(levelRowSchema),
      })
      .nullable(),
    /** The server's own gzip level; null when it sent no gzip body that decoded. */
    serverGzip: serverGzipSchema.nullable(),
    linkModel: z.array(
      z.strictObject({
        linkMBps: z.number(),
        rows: z.array(linkRowSchema),
        fastest: z.enum(ACCEPT_ENCODINGS),
        /** One sentence: what to do on this link, and by how much. */
        recommendation: z.string(),
      }),
    ),
    samples: z.array(requestSampleSchema.extend({ acceptEncoding: z.enum(ACCEPT_ENCODINGS) })),
  }),
  request: () => ({ body: true, checks: 'status and headers', why: 'it decodes the body to measure it' }),
  variants: (_params, target) => [{ scheme: schemeOf(target.url) }],
  demands: (params) =>
    sequential({
      value: params.encodings.length * params.requests,
      param: 'requests',
      how: `${params.encodings.length} encodings x ${params.requests} requests`,
    }),
});
