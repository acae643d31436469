// Decoding a body a target sent: whole when it is what it says, stopped at the size cap or the
// ratio check when it is a decompression bomb, never held past what is kept.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import zlib from 'node:zlib';
import { compress, decodeCapped, decompress, RATIO_FLOOR_BYTES } from '../../common/content-coding.js';
import { productsJson } from '../../lab/content.js';

const MIB = 1 << 20;
const ZEROS = Buffer.alloc(MIB);
/** 64 MiB of zeros as 64 gzip members: ~67 KB, each member a little under gzip's 1032:1. */
const gzipBomb = Buffer.concat(Array<Buffer>(64).fill(zlib.gzipSync(ZEROS)));
/** 64 MiB of zeros as one brotli stream of about a hundred bytes. */
const brotliBomb = zlib.brotliCompressSync(Buffer.alloc(64 * MIB), {
  params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9 },
});

describe('decodeCapped', () => {
  test('a real body decodes whole; only its first keepBytes are kept', async () => {
    const json = productsJson();
    for (const coding of ['gzip', 'br'] as const) {
      const out = await decodeCapped(coding, compress(coding, json, 6), {
        maxBytes: 32 * MIB,
        maxRatio: 1000,
        keepBytes: 1000,
      });
      assert.equal(out.stopped, undefined, coding);
      assert.equal(out.decodedBytes, json.length, coding);
      assert.deepEqual(out.kept, json.subarray(0, 1000), coding);
    }
  });

  test('past maxBytes it stops, saying how far it got', async () => {
    const out = await decodeCapped('gzip', gzipBomb, { maxBytes: 4 * MIB, maxRatio: 1e6, keepBytes: MIB });
    assert.equal(out.stopped, 'size');
    // Stopped on the first output chunk past the cap (zlib's chunks are 16 KiB).
    assert.ok(out.decodedBytes > 4 * MIB && out.decodedBytes <= 4 * MIB + 16 * 1024, `${out.decodedBytes}`);
    assert.ok(out.consumedBytes < gzipBomb.length, 'the rest of the body was never decoded');
    assert.equal(out.kept.length, MIB);
  });

  test('past maxRatio, once past RATIO_FLOOR_BYTES, it stops: a brotli bomb of a hundred bytes', async () => {
    assert.ok(brotliBomb.length < 1000, `${brotliBomb.length} bytes`);
    const out = await decodeCapped('br', brotliBomb, { maxBytes: 32 * MIB, maxRatio: 1000, keepBytes: MIB });
    assert.equal(out.stopped, 'ratio');
    assert.ok(out.decodedBytes > RATIO_FLOOR_BYTES && out.decodedBytes < 2 * RATIO_FLOOR_BYTES, `${out.decodedBytes}`);
  });

  test('a body that does not decode is an error', async () => {
    await assert.rejects(
      decodeCapped('gzip', Buffer.from('not gzip at all'), { maxBytes: MIB, maxRatio: 1000, keepBytes: 0 }),
    );
  });

  test("the level table's own decode is capped too", () => {
    assert.throws(() => decompress('gzip', gzipBomb, 4 * MIB), { code: 'ERR_BUFFER_TOO_LARGE' });
  });
});
