// Connection settings: a Redis that wants TLS (rediss://, a private CA) and an ACL user with a
// password. A redis-server of the test's own; a run goes through it end to end.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { createLabCa } from '../../lab/certs.js';
import { startLab, type Lab } from '../../lab/index.js';
import { startRegionWorker } from '../../worker/queue-worker.js';
import { EMBEDDED_POLICY_SETTINGS, TargetPolicy } from '../../worker/target-policy.js';
import { answers, needsRedis, requireRedis, startOwnRedis, testPrefix, type OwnRedis } from '../helpers/redis.js';
import { howFleetCommandsEnd } from '../helpers/failover-runs.js';
import { writePlan } from '../helpers/plans.js';
import type { CliProcess } from '../helpers/processes.js';
import { runCli } from '../helpers/repo.js';

const log = createLogger('test', 'silent');

describe('Redis over TLS with an ACL user', needsRedis, () => {
  let redis: OwnRedis;
  let lab: Lab;
  let caPem: string;
  let caFile: string;

  before(async () => {
    requireRedis(); // redis-server comes with the same package
    const ca = await createLabCa();
    const leaf = await ca.issue({ hosts: ['127.0.0.1', 'localhost'] });
    caPem = ca.certPem;
    redis = await startOwnRedis({
      // TLS only (plain port 0), the default user off, one user with a password.
      args: (port, dir) => [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--tls-cert-file',
        path.join(dir, 'server.pem'),
        '--tls-key-file',
        path.join(dir, 'server.key'),
        '--tls-ca-cert-file',
        path.join(dir, 'ca.pem'),
        '--tls-auth-clients',
        'no',
        '--user',
        'default',
        'off',
        '--user',
        'probe',
        'on',
        '>s3cret',
        '~*',
        '&*',
        '+@all',
      ],
      url: (port) => `rediss://probe:s3cret@127.0.0.1:${port}`,
      caPem,
      prepare: async (dir) => {
        await writeFile(path.join(dir, 'server.pem'), leaf.certPem);
        await writeFile(path.join(dir, 'server.key'), leaf.keyPem);
        await writeFile(path.join(dir, 'ca.pem'), caPem);
      },
    });
    caFile = path.join(redis.dir, 'ca.pem');
    lab = await startLab({ log });
  });
  after(async () => {
    await lab?.close();
    await redis?.stop();
  });

  test('rediss:// with user and password and a private CA carries a whole run; wrong credentials or no CA do not connect', async () => {
    const settings = { url: redis.url, caPem };
    const prefix = testPrefix();
    const fleet = openFleet({ redis: settings, prefix, log });
    const worker = startRegionWorker({
      redis: settings,
      prefix,
      region: 'a',
      concurrency: 1,
      log,
      targetPolicy: new TargetPolicy(EMBEDDED_POLICY_SETTINGS),
    });
    try {
      await worker.ready;
      const plan = await parsePlan(
        `
name: over-tls
regions: [a]
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 3, modes: [reused, new] }]
`,
        'inline.yaml',
      );
      const run = await submitRun(fleet, plan, 'over-tls-run');
      const report = await waitForRun(fleet, run.data, { log, progress: { update() {}, done() {} }, pollMs: 200 });
      assert.equal(report?.results.length, 2);
      assert.ok(report?.results.every((r) => r.ok));
    } finally {
      await worker.close(5_000);
      await fleet.close();
    }

    assert.equal(await answers(redis.url.replace('s3cret', 'wrong'), caPem), false, 'wrong password');
    assert.equal(await answers(redis.url, undefined), false, 'certificate from an unknown CA');

    const cli = await runCli(['runs', 'list', '--redis', redis.url, '--redis-ca', caFile, '--prefix', prefix]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /over-tls-run\s+distributed/);
  });
});

describe('a database the Redis does not have', needsRedis, () => {
  let redis: OwnRedis;
  const started: CliProcess[] = [];
  before(async () => {
    requireRedis();
    redis = await startOwnRedis({ args: () => ['--databases', '2'] });
  });
  after(async () => {
    await Promise.all(started.map((p) => p.stop('SIGKILL')));
    await redis?.stop();
  });

  test('worker, coordinator, run, runs and schedule end with one message naming the database (exit 2), and write no job, run or schedule to database 0', async () => {
    // ioredis reports a failed SELECT as an error event and goes on in database 0.
    const url = `${redis.url}/5`;
    const prefix = testPrefix();
    const args = ['--redis', url, '--prefix', prefix];
    const plan = await writePlan(
      'name: no-such-db\nregions: [a]\ntargets: [{ name: t, url: "http://127.0.0.1:1" }]\nexperiments: [{ probe: reuse, requests: 1, modes: [reused] }]\nschedule: { cron: "0 2 * * *" }\n',
    );
    for (const [what, ended] of await howFleetCommandsEnd(args, plan, started, [
      ['schedule', 'add', plan],
      ['schedule', 'list'],
    ])) {
      assert.equal(ended.code, 2, `${what}: exit 2\n${ended.stderr}`);
      assert.match(
        ended.stderr,
        new RegExp(
          `^the Redis at redis://127\\.0\\.0\\.1:${redis.port}/5 has no database 5 \\(ERR DB index is out of range\\)`,
          'm',
        ),
        what,
      );
    }
    // The one key in database 0: BullMQ's marker of the runs queue, which the coordinator's queue
    // writes as it opens, before the check; no job, run or schedule.
    const keys = execFileSync('redis-cli', ['-p', String(redis.port), '--scan'], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    assert.deepEqual(
      keys.filter((key) => key !== `${prefix}:runs:meta`),
      [],
      'keys in database 0',
    );
  });
});
