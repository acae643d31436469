// The drain probe against the lab; connection counts are checked against what the lab server
// itself accepted.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import type { ResultOf } from '../../contracts/result.js';
import type { LabServerName } from '../../lab/index.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { labForThisFile } from '../helpers/lab.js';

const log = createLogger('test', 'silent');
const lab = labForThisFile();

async function drain(
  mode: string,
  path: string,
  options: Record<string, unknown> = {},
  server: LabServerName = 'keepalive',
) {
  const experiment = { probe: 'drain', requests: 20, modes: [mode], clients: ['undici'], ...options };
  const url = lab.url(server, path);
  const target = { name: 't', url, ...(url.startsWith('https:') ? { tls: { insecure: true } } : {}) };
  const [job] = await jobsOf(JSON.stringify({ name: 'drain-test', targets: [target], experiments: [experiment] }));
  const acceptedBefore = lab.servers[server].connectionsAccepted();
  const result = (await executeJob(job, { region: 'local', log })) as ResultOf<'drain'>;
  assert.equal(result.ok, true, JSON.stringify(result.error));
  return { result, serverAccepted: lab.servers[server].connectionsAccepted() - acceptedBefore };
}

const codes = (result: ResultOf<'drain'>) => result.findings.map((f) => f.code);
/** Above undici's ~64 KiB body buffer, under the 256 KiB drain cap. */
const BIG = '/large?bytes=200000';

describe('drain probe', () => {
  test('unread bodies above the socket buffer cost one connection per request', async () => {
    const { result, serverAccepted } = await drain('unread', BIG);
    assert.equal(result.summary.connectionsOpened, 20);
    assert.equal(serverAccepted, 20);
    assert.equal(result.details!.extraConnections, 19);
    assert.ok(
      result.details!.samples.every((s) => s.body.outcome === 'closed-early' && s.body.contentLength === 200_000),
    );
    assert.deepEqual(codes(result), ['UNREAD_BODY_BREAKS_REUSE']);
    assert.equal(result.findings[0].data.extraConnections, 19);
  });

  test('the capped drain brings it back to one connection, as does reading in full', async () => {
    for (const mode of ['drain', 'full']) {
      // A generous time cap: this is about the byte cap; on a loaded machine 200 KB can take over 50 ms.
      const { result, serverAccepted } = await drain(mode, BIG, mode === 'drain' ? { drainMaxMs: 1000 } : {});
      assert.equal(result.summary.connectionsOpened, 1, mode);
      assert.equal(serverAccepted, 1, mode);
      assert.equal(result.details!.extraConnections, 0);
      assert.ok(
        result.details!.samples.every((s) => s.body.outcome === 'read-to-end' && s.bodyBytes === 200_000),
        mode,
      );
      assert.deepEqual(codes(result), []);
    }
  });

  test('an unread body small enough for undici to buffer whole costs nothing', async () => {
    const { result, serverAccepted } = await drain('unread', '/large?bytes=16000');
    assert.equal(serverAccepted, 1);
    assert.ok(result.details!.samples.every((s) => s.body.outcome === 'closed-early'));
    assert.equal(result.details!.extraConnections, 0);
    assert.deepEqual(codes(result), []);
  });

  test('a declared length over the byte cap is not drained at all', async () => {
    const { result, serverAccepted } = await drain('drain', BIG, { drainMaxBytes: 100_000 });
    assert.equal(serverAccepted, 20);
    assert.ok(result.details!.samples.every((s) => s.body.capHit === 'bytes' && s.bodyBytes === 0));
    assert.deepEqual(result.details!.drainCap, { bytes: 100_000, ms: 50 });
    assert.match(result.findings[0].evidence, /20 over the byte cap/);
  });

  test('a trickle body beyond the time cap is abandoned, not waited for', async () => {
    // 64 KiB at 1 KiB every 20 ms takes about 1.3 s to arrive; the drain gives up at 50 ms.
    const { result, serverAccepted } = await drain('drain', '/trickle?bytes=65536&chunk=1024&intervalMs=20', {
      requests: 3,
    });
    assert.equal(serverAccepted, 3, 'an abandoned body takes its connection with it');
    for (const s of result.details!.samples) {
      assert.equal(s.body.capHit, 'time');
      assert.equal(s.body.outcome, 'closed-early');
      assert.ok(s.bodyBytes < 65_536, `read ${s.bodyBytes} B`);
      assert.ok(s.body.drainMs! >= 45 && s.body.drainMs! < 1000, `drained for ${s.body.drainMs} ms`);
    }
    assert.ok(
      result.summary.durationMs < 3 * 1300,
      `3 requests took ${result.summary.durationMs} ms: the bodies were waited for`,
    );
  });

  test('JSON with a trailing newline: the decoder leaves it on the wire, the drain picks it up', async () => {
    // The newline follows 20 ms after the object, so the decoder is done before it arrives
    // (unless this process stalls longer than that: a busy machine may save a connection or two).
    const json = await drain('json', '/json-newline?delayMs=20');
    assert.ok(json.serverAccepted >= 18, `${json.serverAccepted} connections for 20 requests`);
    assert.ok(
      json.result.details!.samples.every((s) => s.bodyBytes === 58 && s.body.contentLength === 59),
      'the object, not its newline',
    );
    assert.deepEqual(codes(json.result), ['UNREAD_BODY_BREAKS_REUSE']);
    const drained = await drain('drain', '/json-newline?delayMs=20', { drainMaxMs: 1000 });
    assert.equal(drained.serverAccepted, 1);
    // When the newline comes in the same packet undici has the whole response: nothing is lost.
    const together = await drain('json', '/json-newline');
    assert.equal(together.serverAccepted, 1);
    assert.ok(together.result.details!.samples.every((s) => s.body.outcome === 'closed-early'));
  });

  test('a non-JSON body in json mode is an UNEXPECTED_BODY error, not a crash', async () => {
    const [job] = await jobsOf(
      JSON.stringify({
        name: 'drain-test',
        targets: [{ name: 't', url: lab.url('keepalive', BIG) }],
        experiments: [{ probe: 'drain', requests: 5, modes: ['json'] }],
      }),
    );
    const result = (await executeJob(job, { region: 'local', log })) as ResultOf<'drain'>;
    assert.equal(result.ok, false);
    assert.equal(result.error?.code, 'UNEXPECTED_BODY');
    assert.equal(result.summary.requests, 3, 'stops after 3 failures in a row');
  });

  test('Connection: close answers are not drained: the connection is lost anyway', async () => {
    const { result, serverAccepted } = await drain('drain', BIG, { requests: 10 }, 'close');
    assert.equal(serverAccepted, 10);
    assert.ok(
      result.details!.samples.every(
        (s) => s.body.outcome === 'skipped-connection-close' && s.bodyBytes === 0 && s.serverClosed,
      ),
    );
    assert.equal(result.details!.extraConnections, 0, 'the server closed them, not the client');
    assert.deepEqual(codes(result), []);
  });

  test('over HTTPS the probe checks for HTTP/2 and says whether a drain matters', async () => {
    const { result } = await drain('full', BIG, { requests: 3 }, 'https');
    assert.equal(result.summary.connectionsOpened, 1);
    assert.deepEqual(
      { checked: result.details!.http2.checked, negotiated: result.details!.http2.negotiated },
      { checked: true, negotiated: false },
    );
    assert.match(result.details!.http2.note, /only http\/1\.1/);
  });
});
