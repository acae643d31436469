// A malformed plan given to `probefleet run --redis` is refused before anything reaches Redis:
// exit 2, the problem named, and not one key under the run's queue prefix. The same command
// with a valid plan writes keys there, so the check can see an enqueue when there is one.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { redisOptions } from '../../common/redis.js';
import { BAD_PLANS_DIR, badPlans } from '../helpers/bad-plans.js';
import { deletePrefix, freePort, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { writePlan } from '../helpers/plans.js';
import { runCli } from '../helpers/repo.js';

/** One of each kind: YAML, schema, cross-field, a problem found only when reading the CA file or a target file, and each plan limit. */
const REFUSED = [
  'yaml-syntax',
  'unknown-probe',
  'bad-cron',
  'duplicate-target',
  'duplicate-experiment-target',
  'missing-ca-file',
  'nesting-too-deep',
  'too-many-jobs',
  'header-value-crlf',
  'target-file-missing', // a target file that is not there
  'target-file-undeclared-label', // a problem inside a target file
];

describe('bad plans and Redis', needsRedis, () => {
  const prefix = testPrefix();
  let redis: Redis;
  const keys = () => redis.keys(`${prefix}*`);

  before(() => {
    requireRedis();
    redis = new Redis(redisOptions({ url: TEST_REDIS_URL }));
  });
  after(async () => {
    redis?.disconnect();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('a valid plan submitted with --detach writes keys under the prefix (the control)', async () => {
    const { code, stderr } = await runCli([
      'run',
      'examples/lecture-keepalive.yaml',
      '--lab-at',
      '127.0.0.1:18170',
      '--redis',
      TEST_REDIS_URL,
      '--prefix',
      prefix,
      '--detach',
    ]);
    assert.equal(code, 0, stderr);
    assert.ok((await keys()).length > 0);
    await deletePrefix(TEST_REDIS_URL, prefix);
    assert.deepEqual(await keys(), []);
  });

  for (const name of REFUSED) {
    test(`run --redis with ${name}.yaml: exit 2, the problem named, nothing enqueued`, async () => {
      const file = `${BAD_PLANS_DIR}/${name}.yaml`;
      const { expected } = (await badPlans()).find((p) => p.file === file)!;
      const { code, stdout, stderr } = await runCli(['run', file, '--redis', TEST_REDIS_URL, '--prefix', prefix]);
      assert.equal(code, 2);
      assert.equal(stdout, '');
      assert.equal(stderr, expected.map((line) => `${line}\n`).join(''));
      assert.deepEqual(await keys(), []);
    });
  }

  test('run --redis with a million-job plan: exit 2 at once, the product named, nothing enqueued (it died of a heap OOM)', async () => {
    const regions = Array.from({ length: 50 }, (_, i) => `r${i}`).join(', ');
    const targets = Array.from({ length: 100 }, (_, i) => `  - { name: t${i}, url: "http://127.0.0.1:9/" }`);
    const experiments = Array.from(
      { length: 50 },
      (_, i) => `  - { probe: drain, modes: [full, unread, drain, json], clients: [undici], requests: ${i + 1} }`,
    );
    const file = await writePlan(
      ['name: million', `regions: [${regions}]`, 'targets:', ...targets, 'experiments:', ...experiments, ''].join('\n'),
    );
    const { code, stdout, stderr } = await runCli(['run', file, '--redis', TEST_REDIS_URL, '--prefix', prefix]);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(stderr, /^\S+:105:3: experiments: 1,000,000 jobs per run, over the limit of 100,000 \(--max-jobs/);
    assert.deepEqual(await keys(), []);
  });

  test('run --redis of a run whose data the coordinator could not read: exit 2 before connecting, nothing written', async () => {
    // Each region's jobs are listed once: one region of 10,000 targets (from a file) x 25
    // experiments = 250,000 jobs, ~35 MiB of them, over the 32 MiB read.
    const file = await writePlan(
      [
        'name: huge',
        'regions: [r0]',
        'targetFiles: [{ files: [sd.json] }]',
        'experiments:',
        ...Array.from(
          { length: 25 },
          (_, i) => `  - { probe: reuse, requests: 1, modes: [reused], timeoutMs: ${5000 + i} }`,
        ),
        '',
      ].join('\n'),
    );
    const addresses = Array.from({ length: 10_000 }, (_, i) => `127.0.0.1:${10_000 + i}`);
    await writeFile(path.join(path.dirname(file), 'sd.json'), JSON.stringify([{ targets: addresses }]));
    const run = (redis: string) => runCli(['run', file, '--redis', redis, '--prefix', prefix, '--max-jobs', '300000']);
    const refused =
      /^run huge-\S+: 250,000 jobs in each region make a run's data of 3\d\.\d MiB, over the 32\.0 MiB the coordinator reads; split the plan into runs of fewer targets or experiments\n$/;
    const here = await run(TEST_REDIS_URL);
    assert.equal(here.code, 2, here.stderr);
    assert.match(here.stderr, refused);
    assert.deepEqual(await keys(), [], "not even the queues' settings");
    // Refused before connecting: a Redis that is not there changes nothing.
    const nowhere = await run(`redis://127.0.0.1:${await freePort()}`);
    assert.equal(nowhere.code, 2, nowhere.stderr);
    assert.match(nowhere.stderr, refused);
  });

  test('run --redis --regions that take a plan over the limit: exit 2, nothing enqueued', async () => {
    const regions = Array.from({ length: 50 }, (_, i) => `r${i}`);
    const { code, stderr } = await runCli([
      'run',
      'examples/lecture-keepalive.yaml',
      '--lab-at',
      '127.0.0.1:18170',
      '--redis',
      TEST_REDIS_URL,
      '--prefix',
      prefix,
      '--max-jobs',
      '100',
      '--regions',
      ...regions,
    ]);
    assert.equal(code, 2);
    assert.match(
      stderr,
      /^examples\/lecture-keepalive\.yaml:24:3: experiments: 400 jobs per run, over the limit of 100 \(--max-jobs or PROBEFLEET_MAX_JOBS raise it\): 50 regions x 8 jobs per region;/,
    );
    assert.deepEqual(await keys(), []);
  });
});
