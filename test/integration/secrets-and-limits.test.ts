// Secrets and the per-response byte cap, against servers of this test on loopback: a header's
// `${env:NAME}` is filled in on the worker and the value reaches the target but no result, log
// line or Redis key; a missing variable is a SECRET_NOT_SET result; a body past the cap is cut
// with RESPONSE_TOO_LARGE by every way a probe reads bodies.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { ProbeBatch } from '../../contracts/job.js';
import { JOB_LIMITS } from '../../contracts/limits.js';
import { createLogger } from '../../common/log.js';
import { openFleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { executeJob } from '../../worker/execute-job.js';
import { h2Request, h2SessionOver } from '../../worker/http/h2-session.js';
import { generateLoad } from '../../worker/http/load-generator.js';
import { EMBEDDED_POLICY_SETTINGS, TargetPolicy } from '../../worker/target-policy.js';
import { captureLog } from '../helpers/logs.js';
import { jobsOf } from '../helpers/plans.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';

const SECRET = `pf-secret-${process.pid}-value`;
const CHUNK = Buffer.alloc(1 << 20, 0x61);
/** Chunks an endless body sends at most: past the cap, and still bounded. */
const MAX_CHUNKS = JOB_LIMITS.responseBytes / CHUNK.length + 16;

/** Writes 1 MiB chunks until the client goes away (or MAX_CHUNKS). */
function endless(res: http.ServerResponse | http2.Http2ServerResponse): void {
  let sent = 0;
  const more = () => {
    while (sent < MAX_CHUNKS && !res.destroyed) {
      sent++;
      if (!(res as http.ServerResponse).write(CHUNK)) return void res.once('drain', more);
    }
    res.end();
  };
  res.writeHead(200, { 'content-type': 'application/octet-stream' });
  more();
}

describe('secrets and the response byte cap', () => {
  const seen: http.IncomingHttpHeaders[] = [];
  let server: http.Server;
  let h2c: http2.Http2Server;
  let url: string;
  let h2cUrl: string;

  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/endless') return endless(res);
      if (req.url === '/declared-too-long') {
        // A length past the cap, declared up front: curl refuses it before reading the body.
        res.writeHead(200, { 'content-length': JOB_LIMITS.responseBytes + 1 });
        return void res.end(CHUNK);
      }
      seen.push(req.headers);
      res.end('ok');
    });
    h2c = http2.createServer((_req, res) => endless(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => h2c.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    h2cUrl = `http://127.0.0.1:${(h2c.address() as net.AddressInfo).port}`;
    process.env.PF_TEST_SECRET = SECRET;
  });
  after(async () => {
    delete process.env.PF_TEST_SECRET;
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await new Promise((resolve) => h2c?.close(resolve));
  });

  const plan = (header: string, experiment: string, path = '/') => `
name: secrets
targets: [{ name: api, url: "${url}${path}", headers: { ${header} } }]
experiments: [${experiment}]
`;

  test('a referenced secret reaches the target (also from a cold child), never the job, result or logs', async () => {
    const jobs = await jobsOf(
      plan('x-api-key: "${env:PF_TEST_SECRET}"', '{ probe: reuse, requests: 2, modes: [reused, cold] }'),
    );
    for (const job of jobs) {
      assert.equal(JSON.stringify(job).includes(SECRET), false, 'the job carries the reference');
      const { log, text } = captureLog();
      log.info({ job }, 'a job, logged whole');
      const result = await executeJob(job, { region: 'local', log });
      assert.equal(result.ok, true, result.error?.message);
      assert.equal(JSON.stringify(result).includes(SECRET), false, 'no secret in the result');
      assert.equal(text().includes(SECRET), false, 'no secret in the logs');
      assert.match(text(), /"x-api-key":"\[redacted\]"/);
    }
    assert.equal(seen.length, 4);
    for (const headers of seen) assert.equal(headers['x-api-key'], SECRET);
  });

  test('a variable the worker does not have: SECRET_NOT_SET naming it, and no request', async () => {
    const before = seen.length;
    const [job] = await jobsOf(
      plan('authorization: "Bearer ${env:PF_TEST_NOT_SET}"', '{ probe: reuse, requests: 2, modes: [reused] }'),
    );
    const result = await executeJob(job, { region: 'local', log: createLogger('test', 'silent') });
    assert.equal(result.error?.code, 'SECRET_NOT_SET');
    assert.equal(
      result.error?.message,
      'header authorization refers to ${env:PF_TEST_NOT_SET}, which is not set on this worker',
    );
    assert.equal(seen.length, before);
  });

  test('logs redact every header value, whatever the case of its name', () => {
    const { log, text } = captureLog();
    log.info(
      {
        headers: { Authorization: 'a1' },
        target: { headers: { Cookie: 'c1' } },
        job: { target: { headers: { 'X-Api-Key': 'k1' } } },
      },
      'm',
    );
    for (const value of ['a1', 'c1', 'k1']) assert.equal(text().includes(value), false, value);
  });

  test('a body past the cap is cut with RESPONSE_TOO_LARGE: undici client, cold child, load lanes (h1 and h2), node:http2 streams', async () => {
    const [reused, cold] = await jobsOf(
      plan('accept: "*/*"', '{ probe: reuse, requests: 1, modes: [reused, cold], client: node }', '/endless'),
    );
    for (const job of [reused, cold]) {
      const result = await executeJob(job, { region: 'local', log: createLogger('test', 'silent') });
      assert.equal(result.error?.code, 'RESPONSE_TOO_LARGE', `${job.jobId}: ${result.error?.message}`);
    }
    // curl writes the body to /dev/null (it is never held); it refuses a declared length past the
    // cap (curl 7.88 cannot cut a chunked body at a size: its request timeout bounds that one).
    const [curlCold] = await jobsOf(
      plan('accept: "*/*"', '{ probe: reuse, requests: 1, modes: [cold], client: curl }', '/declared-too-long'),
    );
    const curlResult = await executeJob(curlCold!, { region: 'local', log: createLogger('test', 'silent') });
    assert.equal(curlResult.error?.code, 'RESPONSE_TOO_LARGE', curlResult.error?.message);
    const policy = new TargetPolicy(EMBEDDED_POLICY_SETTINGS);
    for (const [target, mode] of [
      [`${url}/endless`, 'reused'],
      [`${h2cUrl}/endless`, 'h2'],
    ] as const) {
      const load = await generateLoad({
        url: target,
        mode,
        connections: 1,
        streams: 1,
        durationMs: 20_000,
        maxRequests: 2,
        timeoutMs: 10_000,
        tlsResume: false,
        signal: AbortSignal.timeout(30_000),
        policy,
      });
      assert.deepEqual(load.errors, { RESPONSE_TOO_LARGE: 2 }, mode);
    }
    const socket = net.connect((h2c.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const session = h2SessionOver(h2cUrl, socket);
    try {
      await assert.rejects(
        h2Request(session, { method: 'GET', path: '/endless', headers: {} }, 20_000, AbortSignal.timeout(30_000)),
        {
          code: 'EWIRE_TOO_LARGE',
        },
      );
    } finally {
      session.destroy();
    }
  });

  test('jobs in Redis carry the reference, not the value', needsRedis, async () => {
    requireRedis();
    const prefix = testPrefix();
    const fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log: createLogger('test', 'silent') });
    try {
      const loaded = await parsePlan(
        plan('authorization: "Bearer ${env:PF_TEST_SECRET}"', '{ probe: reuse, requests: 2, modes: [reused] }').replace(
          'name: secrets',
          'name: secrets\nregions: [idle]',
        ),
        'inline.yaml',
      );
      const run = await submitRun(fleet, loaded, 'secrets-run-1');
      const job = (await fleet.regionQueue('idle').getJob(run.jobs[0].jobId))!;
      assert.equal((job.data as ProbeBatch).jobs[0]!.target.headers?.authorization, 'Bearer ${env:PF_TEST_SECRET}');
      const keys = await fleet.client.keys(`${prefix}*`);
      for (const key of keys) {
        const type = await fleet.client.type(key);
        const dump =
          type === 'hash'
            ? JSON.stringify(await fleet.client.hgetall(key))
            : type === 'string'
              ? await fleet.client.get(key)
              : '';
        assert.equal(String(dump).includes(SECRET), false, key);
      }
    } finally {
      await fleet.close();
      await deletePrefix(TEST_REDIS_URL, prefix);
    }
  });
});
