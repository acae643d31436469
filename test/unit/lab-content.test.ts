// The lab's generated bodies are those of the HTTP performance lecture (docs/probes.md#sources), byte for
// byte where the lecture gives bytes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, test } from 'node:test';
import { acceptedCodings } from '../../lab/compression-routes.js';
import { productsJson, randomBytes, TINY_JSON } from '../../lab/content.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('lab content', () => {
  test('products.json is 179,500 bytes of JSON, the same every time', () => {
    const body = productsJson();
    assert.equal(body.length, 179_500);
    const parsed = JSON.parse(body.toString()) as { products: unknown[] };
    assert.ok(parsed.products.length > 300);
    assert.equal(sha(productsJson()), sha(body));
  });

  test('products.json compresses like the lecture’s: gzip 1 > 6 > 9, about a ninth at level 6', () => {
    const [one, six, nine] = [1, 6, 9].map((level) => zlib.gzipSync(productsJson(), { level }).length);
    assert.ok(one > six && six > nine, `${one} ${six} ${nine}`);
    assert.ok(six / 179_500 > 0.09 && six / 179_500 < 0.14, `level 6 gives ${six} B`);
  });

  test('the tiny JSON is 19 bytes and grows to 39 with gzip; random bytes do not shrink', () => {
    assert.equal(TINY_JSON.length, 19);
    assert.equal(zlib.gzipSync(TINY_JSON, { level: 1 }).length, 39);
    const random = randomBytes();
    assert.equal(random.length, 100_000);
    assert.equal(sha(randomBytes()), sha(random), 'seeded, so the same bytes every run');
    assert.ok(zlib.gzipSync(random, { level: 1 }).length > 100_000);
  });

  test('Accept-Encoding: q-values, wildcards and refusals', () => {
    const offered = ['br', 'zstd', 'gzip'] as const;
    assert.deepEqual(acceptedCodings('gzip', [...offered]), ['gzip']);
    assert.deepEqual(acceptedCodings('gzip, br', [...offered]), ['br', 'gzip']);
    assert.deepEqual(acceptedCodings('gzip;q=1, br;q=0.5', [...offered]), ['gzip', 'br']);
    assert.deepEqual(acceptedCodings('*;q=0.1, br;q=0', [...offered]), ['zstd', 'gzip']);
    assert.deepEqual(acceptedCodings('identity', [...offered]), []);
    assert.deepEqual(acceptedCodings(undefined, [...offered]), []);
  });
});
