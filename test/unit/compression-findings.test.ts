// The compression probe's finding rules (worker/probes/compression-findings.ts) as a table: what
// each Accept-Encoding got back in, the finding out or none. Each case starts from a server that
// gets it right (text of 10 KB in gzip when asked, Vary: Accept-Encoding) and changes one thing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyRules } from '../../contracts/findings.js';
import type { EncodingRow, LevelRow } from '../../contracts/probes/compression.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import {
  COMPRESSION_RULES,
  compressesIncompressible,
  compressesTinyResponse,
  compressionWithoutVary,
  noCompressionForText,
  serverGzipLevelWaste,
  type CompressionFindingInput,
} from '../../worker/probes/compression-findings.js';
import { type RuleCase, testRules } from '../helpers/finding-rules.js';

type Details = ProbeDetails<'compression'>;
const where = { region: 'local', target: 'json', probe: 'compression' };
const JSON_TYPE = 'application/json';

const identity = (row: Partial<EncodingRow> = {}): EncodingRow => ({
  acceptEncoding: 'identity',
  answered: 3,
  status: 200,
  contentEncoding: null,
  contentType: JSON_TYPE,
  vary: 'Accept-Encoding',
  encodedBytes: 10_000,
  decodedBytes: 10_000,
  firstBytesHex: '7b22',
  ...row,
});
const gzip = (row: Partial<EncodingRow> = {}): EncodingRow => ({
  acceptEncoding: 'gzip',
  answered: 3,
  status: 200,
  contentEncoding: 'gzip',
  contentType: JSON_TYPE,
  vary: 'Accept-Encoding',
  encodedBytes: 2_000,
  decodedBytes: 10_000,
  firstBytesHex: '1f8b',
  ...row,
});
const levelRow = (row: Partial<LevelRow> = {}): LevelRow => ({
  coding: 'gzip',
  level: 6,
  bytes: 2_000,
  ratio: 0.2,
  compressMs: 0.4,
  decompressMs: 0.05,
  runs: 3,
  ...row,
});

function input(
  encodings: EncodingRow[] = [identity(), gzip()],
  changes: Partial<Details> & { tinyBytes?: number } = {},
): CompressionFindingInput {
  const { tinyBytes = 1024, ...details } = changes;
  return {
    details: {
      encodings,
      unavailable: [],
      levelTable: { inputBytes: 10_000, contentType: JSON_TYPE, rows: [levelRow({ level: 1 }), levelRow()] },
      serverGzip: null,
      linkModel: [],
      samples: [],
      ...details,
    },
    tinyBytes,
  };
}

type Case = RuleCase<CompressionFindingInput>;

/** A server whose gzip answer matched zlib's level 9, with level 6 beside it. */
const level9Server = (level6: { bytes: number; cpuFactor: number }): NonNullable<Details['serverGzip']> => ({
  encodedBytes: 2_000,
  matches: [{ library: 'zlib', level: 9, bytes: 2_000 }],
  exact: true,
  level6,
});

/** Five answers each to identity and gzip, gzip's time to first byte `extraMs` longer. */
const ttfbSamples = (extraMs = 4): Details['samples'] =>
  [0.9, 1, 1.1, 1, 1.05].flatMap((ms, i) => [
    {
      seq: 2 * i,
      status: 200,
      newConnection: i === 0,
      bodyBytes: 10_000,
      phases: { processing: ms },
      acceptEncoding: 'identity' as const,
    },
    {
      seq: 2 * i + 1,
      status: 200,
      newConnection: false,
      bodyBytes: 2_000,
      phases: { processing: ms + extraMs },
      acceptEncoding: 'gzip' as const,
    },
  ]);

const cases: Case[] = [
  {
    name: 'gzip served without Vary',
    rule: compressionWithoutVary,
    input: input([identity({ vary: null }), gzip({ vary: 'Origin' })]),
    expected: {
      code: 'COMPRESSION_WITHOUT_VARY',
      evidence:
        /^the answer's encoding depends on Accept-Encoding \(identity → identity, gzip → gzip\), but 2 of 2 answers lack Vary: Accept-Encoding \(identity: no Vary, gzip: Vary: Origin\)$/,
      data: { encodingsServed: 'identity,gzip', answersWithoutVary: 2 },
    },
  },
  {
    name: 'Vary: * covers Accept-Encoding',
    rule: compressionWithoutVary,
    input: input([identity({ vary: '*' }), gzip({ vary: 'Origin, *' })]),
  },
  {
    name: 'one encoding for everyone needs no Vary',
    rule: compressionWithoutVary,
    input: input([identity({ vary: null }), identity({ acceptEncoding: 'gzip', vary: null })]),
  },
  {
    name: 'a failed answer is not counted among the encodings served',
    rule: compressionWithoutVary,
    input: input([identity({ vary: null }), gzip({ vary: null, status: 500 })]),
  },
  {
    name: 'a 19 B body gzipped to 39 B',
    rule: compressesTinyResponse,
    input: input([identity({ encodedBytes: 19, decodedBytes: 19 }), gzip({ encodedBytes: 39, decodedBytes: 19 })]),
    expected: {
      code: 'COMPRESSES_TINY_RESPONSE',
      evidence: /^19 B of application\/json sent compressed: gzip 39 B \(205\.3%\)$/,
      data: { decodedBytes: 19, encodedBytes: 39 },
    },
  },
  {
    name: "the threshold is the plan's tinyBytes",
    rule: compressesTinyResponse,
    input: input([identity(), gzip()], { tinyBytes: 10_001 }),
    expected: {
      code: 'COMPRESSES_TINY_RESPONSE',
      evidence: /^10,000 B of application\/json sent compressed: gzip 2,000 B \(20\.0%\)$/,
      data: { decodedBytes: 10_000, encodedBytes: 2_000 },
    },
  },
  {
    name: 'a tiny body sent as is',
    rule: compressesTinyResponse,
    input: input([
      identity({ encodedBytes: 19, decodedBytes: 19 }),
      gzip({ contentEncoding: null, encodedBytes: 19, decodedBytes: 19 }),
    ]),
  },
  {
    name: 'a JPEG gzipped',
    rule: compressesIncompressible,
    input: input([identity({ contentType: 'image/jpeg' }), gzip({ contentType: 'image/jpeg', encodedBytes: 9_990 })]),
    expected: {
      code: 'COMPRESSES_INCOMPRESSIBLE',
      evidence: /^10,000 B of image\/jpeg sent compressed: gzip 9,990 B \(99\.9%\)$/,
      data: { decodedBytes: 10_000, encodedBytes: 9_990, contentType: 'image/jpeg' },
    },
  },
  {
    name: 'random bytes of no telling type that grew',
    rule: compressesIncompressible,
    input: input([
      identity({ contentType: 'application/octet-stream' }),
      gzip({ contentType: null, encodedBytes: 10_053 }),
    ]),
    expected: {
      code: 'COMPRESSES_INCOMPRESSIBLE',
      evidence: /^10,000 B of body sent compressed: gzip 10,053 B \(100\.5%\)$/,
      data: { decodedBytes: 10_000, encodedBytes: 10_053, contentType: '' },
    },
  },
  {
    name: 'an SVG is text, and gzip saved plenty',
    rule: compressesIncompressible,
    input: input([identity({ contentType: 'image/svg+xml' }), gzip({ contentType: 'image/svg+xml' })]),
  },
  {
    name: "a tiny JPEG is the tiny rule's",
    rule: compressesIncompressible,
    input: input([gzip({ contentType: 'image/jpeg', encodedBytes: 120, decodedBytes: 100 })]),
  },
  {
    name: 'JSON of 10 KB uncompressed to Accept-Encoding gzip',
    rule: noCompressionForText,
    input: input([identity(), gzip({ contentEncoding: null, encodedBytes: 10_000 })]),
    expected: {
      code: 'NO_COMPRESSION_FOR_TEXT',
      evidence:
        /^10,000 B of application\/json sent uncompressed to Accept-Encoding gzip; gzip level 6 makes it 2,000 B \(20\.0%\) in 0\.40 ms here$/,
      data: { decodedBytes: 10_000, gzipBytes: 2_000, gzipLevel: 6, gzipCompressMs: 0.4 },
    },
  },
  {
    name: 'without level 6 in the table, the first gzip level speaks',
    rule: noCompressionForText,
    input: input([gzip({ contentEncoding: null, encodedBytes: 10_000 })], {
      levelTable: {
        inputBytes: 10_000,
        contentType: JSON_TYPE,
        rows: [levelRow({ level: 1, bytes: 2_500, ratio: 0.25 })],
      },
    }),
    expected: {
      code: 'NO_COMPRESSION_FOR_TEXT',
      evidence: /gzip level 1 makes it 2,500 B \(25\.0%\)/,
      data: { decodedBytes: 10_000, gzipBytes: 2_500, gzipLevel: 1, gzipCompressMs: 0.4 },
    },
  },
  {
    name: 'compressed when asked',
    rule: noCompressionForText,
    input: input(),
  },
  {
    name: 'only identity asked for',
    rule: noCompressionForText,
    input: input([identity()]),
  },
  {
    name: 'text that gzip hardly shrinks',
    rule: noCompressionForText,
    input: input([identity(), gzip({ contentEncoding: null, encodedBytes: 10_000 })], {
      levelTable: { inputBytes: 10_000, contentType: JSON_TYPE, rows: [levelRow({ bytes: 9_500, ratio: 0.95 })] },
    }),
  },
  {
    name: 'an image sent as is',
    rule: noCompressionForText,
    input: input([identity(), gzip({ contentEncoding: null, encodedBytes: 10_000 })], {
      levelTable: { inputBytes: 10_000, contentType: 'image/png', rows: [levelRow()] },
    }),
  },
  {
    name: 'no level table (no body decoded)',
    rule: noCompressionForText,
    input: input([identity(), gzip({ contentEncoding: null, encodedBytes: 10_000 })], { levelTable: null }),
  },
  // GZIP_LEVEL_WASTE weighs the server's extra time to first byte against level 6's size and CPU,
  // measured with the server's level (worker/gzip-levels.ts); a real nginx at gzip_comp_level 9 in
  // test/integration/real-servers.test.ts.
  {
    name: 'level 9 costs the server 4 ms over identity, and level 6 would cost 4x less CPU for 2.4% more bytes',
    rule: serverGzipLevelWaste,
    input: input([identity(), gzip()], {
      serverGzip: level9Server({ bytes: 2_050, cpuFactor: 4 }),
      samples: ttfbSamples(),
    }),
    expected: {
      code: 'GZIP_LEVEL_WASTE',
      evidence:
        /level 9 \(2,000 B, zlib 1\.2.*adds 4\.00 ms.*level 6 sends 2,050 B \(2\.4% more\) for 4\.0x less CPU here/,
      data: {
        serverLevel: 9,
        library: 'zlib',
        serverExtraTtfbMs: 4,
        level6Bytes: 2_050,
        servedBytes: 2_000,
        cpuFactor: 4,
      },
    },
  },
  {
    name: 'level 9, but level 6 would send 20% more bytes',
    rule: serverGzipLevelWaste,
    input: input([identity(), gzip()], {
      serverGzip: level9Server({ bytes: 2_500, cpuFactor: 4 }),
      samples: ttfbSamples(),
    }),
  },
  {
    name: 'level 9, but it costs hardly more CPU than level 6',
    rule: serverGzipLevelWaste,
    input: input([identity(), gzip()], {
      serverGzip: level9Server({ bytes: 2_050, cpuFactor: 1.5 }),
      samples: ttfbSamples(),
    }),
  },
  {
    name: 'level 9, and no extra time to first byte (pre-compressed)',
    rule: serverGzipLevelWaste,
    input: input([identity(), gzip()], {
      serverGzip: level9Server({ bytes: 2_050, cpuFactor: 4 }),
      samples: ttfbSamples(0),
    }),
  },
  {
    name: 'no gzip body from the server',
    rule: serverGzipLevelWaste,
    input: input(),
  },
  {
    name: 'the server compresses at level 6',
    rule: serverGzipLevelWaste,
    input: input([identity(), gzip()], {
      serverGzip: { encodedBytes: 2_000, matches: [{ library: 'zlib', level: 6, bytes: 2_000 }], exact: true },
    }),
  },
  {
    name: "the server's level is unknown",
    rule: serverGzipLevelWaste,
    input: input([identity(), gzip()], {
      serverGzip: { encodedBytes: 2_000, matches: [], exact: false, unknownReason: 'no size matched' },
    }),
  },
  {
    name: 'level 9, but no identity answer to compare the time to first byte with',
    rule: serverGzipLevelWaste,
    input: input([gzip()], {
      serverGzip: { encodedBytes: 2_000, matches: [{ library: 'zlib', level: 9, bytes: 2_000 }], exact: true },
    }),
  },
];

testRules('COMPRESSION_RULES', COMPRESSION_RULES, cases, where);

test('a server that gets it right: no rule fires', () => {
  assert.deepEqual(applyRules(COMPRESSION_RULES, input(), where), []);
});
