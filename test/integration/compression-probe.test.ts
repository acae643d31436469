// The compression probe against real loopback servers: the lab's routes (the lecture's api.php and
// bodies: the HTTP performance lecture, docs/probes.md#sources), and a server of the test's own
// that counts every byte it writes.
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import zlib from 'node:zlib';
import { describe, test } from 'node:test';
import { ZSTD_AVAILABLE } from '../../common/content-coding.js';
import { createLogger } from '../../common/log.js';
import type { ResultOf } from '../../contracts/result.js';
import { productsJson, RANDOM_BYTES } from '../../lab/content.js';
import { handleLabRequest } from '../../lab/routes.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { labForThisFile } from '../helpers/lab.js';

const log = createLogger('test', 'silent');
const lab = labForThisFile();

/** Runs one compression job, lean by default: 2 requests per encoding, 3 runs per level, no brotli 11. */
async function compression(url: string, options: Record<string, unknown> = {}): Promise<ResultOf<'compression'>> {
  const experiment = { probe: 'compression', requests: 2, repetitions: 3, brotliLevels: [1, 5], ...options };
  const target = { name: 't', url, ...(url.startsWith('https:') ? { tls: { insecure: true } } : {}) };
  // JSON is YAML: the plan goes through the real loader and splitter.
  const [job] = await jobsOf(
    JSON.stringify({ name: 'compression-test', targets: [target], experiments: [experiment] }),
  );
  const result = (await executeJob(job, { region: 'local', log })) as ResultOf<'compression'>;
  assert.equal(result.ok, true, JSON.stringify(result.error));
  return result;
}

const codes = (result: ResultOf<'compression'>) => result.findings.map((f) => f.code).sort();
const row = (result: ResultOf<'compression'>, accept: string) =>
  result.details!.encodings.find((e) => e.acceptEncoding === accept)!;

describe('compression probe', () => {
  test('gzip bytes on the wire are what the server wrote, counted on the server', async () => {
    // The lab's own handler on a server that counts what it writes to every socket.
    let written = 0;
    const server = http.createServer(handleLabRequest);
    server.on('connection', (socket: net.Socket) => socket.once('close', () => (written += socket.bytesWritten)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const result = await compression(`http://127.0.0.1:${port}/api/products`, {
        encodings: ['gzip'],
        requests: 3,
        gzipLevels: [6],
      });
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const gzip = row(result, 'gzip');
      assert.equal(gzip.answered, 3);
      assert.equal(gzip.contentEncoding, 'gzip');
      // Every response is the same size, so three of them are exactly what the server wrote.
      assert.equal(
        gzip.wireBytes! * 3,
        written,
        `probe read ${gzip.wireBytes} B per response, server wrote ${written} B in all`,
      );
      assert.equal(gzip.encodedBytes, zlib.gzipSync(productsJson(), { level: 6 }).length);
      assert.equal(gzip.decodedBytes, 179_500);
      assert.ok(gzip.wireBytes! > gzip.encodedBytes, 'status line and headers are on the wire too');
      assert.equal(gzip.firstBytesHex.slice(0, 4), '1f8b', 'raw gzip starts with the magic bytes');
    } finally {
      server.close();
    }
  });

  test("the lecture's api.php: gzip only, level 6, Vary sent, no compression findings", async () => {
    const result = await compression(lab.url('keepalive', '/api/products'));
    assert.equal(row(result, 'identity').encodedBytes, 179_500);
    assert.equal(row(result, 'identity').contentEncoding, null);
    assert.equal(row(result, 'gzip').contentEncoding, 'gzip');
    assert.equal(row(result, 'br').contentEncoding, null, 'api.php only does gzip');
    assert.match(row(result, 'gzip').vary!, /Accept-Encoding/);
    assert.deepEqual(result.details!.serverGzip!.matches, [{ library: 'node', level: 6, bytes: 20_401 }]);
    assert.equal(result.details!.serverGzip!.exact, true);
    assert.deepEqual(codes(result), []);
    // Every request went over one kept-alive connection.
    assert.equal(result.summary.connectionsOpened, 1);
  });

  test('the level table orders gzip sizes 1 > 6 > 9 for the products JSON, and decodes what it packs', async () => {
    const result = await compression(lab.url('keepalive', '/assets/products.json'), { encodings: ['identity'] });
    const table = result.details!.levelTable!;
    assert.equal(table.inputBytes, 179_500);
    assert.equal(table.contentType, 'application/json');
    const gzip = table.rows.filter((r) => r.coding === 'gzip');
    assert.deepEqual(
      gzip.map((r) => r.level),
      [1, 6, 9],
    );
    assert.ok(gzip[0].bytes > gzip[1].bytes && gzip[1].bytes > gzip[2].bytes, JSON.stringify(gzip.map((r) => r.bytes)));
    assert.ok(gzip.every((r) => r.runs === 3 && r.compressMs > 0 && r.decompressMs > 0));
    assert.deepEqual(
      table.rows.filter((r) => r.coding === 'br').map((r) => r.level),
      [1, 5],
    );
    assert.equal(
      table.rows.some((r) => r.coding === 'zstd'),
      ZSTD_AVAILABLE,
    );
  });

  test('a tiny body compressed anyway is flagged, and grows', async () => {
    const result = await compression(lab.url('keepalive', '/assets/tiny.json?policy=always'));
    assert.deepEqual(codes(result), ['COMPRESSES_TINY_RESPONSE']);
    assert.equal(row(result, 'gzip').encodedBytes, 39, "the lecture's 19 -> 39 B");
    assert.equal(row(result, 'gzip').decodedBytes, 19);
    // Under the sensible policy the same body goes out as it is, and nothing is flagged.
    const sensible = await compression(lab.url('keepalive', '/assets/tiny.json'));
    assert.deepEqual(codes(sensible), []);
    assert.equal(row(sensible, 'gzip').contentEncoding, null);
  });

  test('random bytes compressed anyway are flagged; untouched they are not', async () => {
    const result = await compression(lab.url('keepalive', '/assets/random.bin?policy=always'));
    assert.deepEqual(codes(result), ['COMPRESSES_INCOMPRESSIBLE']);
    assert.equal(row(result, 'gzip').decodedBytes, RANDOM_BYTES);
    assert.ok(row(result, 'gzip').encodedBytes > RANDOM_BYTES, 'gzip adds bytes to random data');
    assert.deepEqual(codes(await compression(lab.url('keepalive', '/assets/random.bin'))), []);
  });

  test('text sent uncompressed to clients that accept gzip is flagged', async () => {
    const result = await compression(lab.url('keepalive', '/assets/products.json?policy=never'));
    assert.deepEqual(codes(result), ['NO_COMPRESSION_FOR_TEXT']);
    assert.equal(result.findings[0].data.gzipLevel, 6);
  });

  test('compressed answers without Vary: Accept-Encoding are flagged', async () => {
    const result = await compression(lab.url('keepalive', '/assets/products.json?vary=0'));
    assert.deepEqual(codes(result), ['COMPRESSION_WITHOUT_VARY']);
    assert.deepEqual(codes(await compression(lab.url('keepalive', '/assets/products.json'))), []);
  });

  test("a Node server at gzip level 9 is recognised by its size, as Node's zlib level 9", async () => {
    const result = await compression(lab.url('keepalive', '/assets/products.json?gzip=9'), { encodings: ['gzip'] });
    assert.deepEqual(result.details!.serverGzip!.matches, [{ library: 'node', level: 9, bytes: 19_202 }]);
    // Without an identity answer there is no time to first byte to judge waste against.
    assert.equal(codes(result).includes('GZIP_LEVEL_WASTE'), false);
  });

  test('the link model puts identity against each encoding at each link speed', async () => {
    const result = await compression(lab.url('keepalive', '/api/products'), { linkSpeedsMBps: [1, 1000] });
    const [slow, fast] = result.details!.linkModel;
    assert.equal(slow.linkMBps, 1);
    assert.deepEqual(
      slow.rows.map((r) => r.contentEncoding),
      [null, 'gzip'],
      'br came back as identity and is not a separate row',
    );
    const identity = slow.rows[0];
    assert.ok(
      Math.abs(identity.transferMs - identity.wireBytes / 1000) < 1e-6,
      '1 MB/s moves 1,000 bytes per millisecond',
    );
    // At 1 MB/s shipping 160 KB fewer bytes wins whatever the CPU costs on this machine.
    assert.equal(slow.fastest, 'gzip');
    assert.match(slow.recommendation, /^gzip saves/);
    assert.equal(fast.linkMBps, 1000);
    for (const m of [slow, fast])
      for (const r of m.rows) assert.ok(Math.abs(r.totalMs - (r.compressMs + r.transferMs + r.decodeMs)) < 1e-9);
  });

  test('zstd is measured where the runtime has it, and reported unavailable where it does not', async () => {
    const result = await compression(lab.url('keepalive', '/assets/products.json'), { encodings: ['zstd', 'gzip'] });
    if (ZSTD_AVAILABLE) {
      assert.equal(row(result, 'zstd').contentEncoding, 'zstd');
      assert.equal(row(result, 'zstd').decodedBytes, 179_500);
    } else {
      assert.deepEqual(
        result.details!.unavailable.map((u) => u.encoding),
        ['zstd'],
      );
      assert.equal(row(result, 'zstd'), undefined);
      assert.equal(row(result, 'gzip').decodedBytes, 179_500);
    }
  });

  test('over HTTPS the wire bytes are TLS records, more than the body', async () => {
    const result = await compression(lab.url('https', '/api/products'), { encodings: ['gzip'] });
    assert.ok(row(result, 'gzip').wireBytes! > row(result, 'gzip').encodedBytes);
  });
});
