// A malformed plan given to `probefleet run --redis` is refused before anything reaches Redis:
// exit 2, the problem named, and not one key under the run's queue prefix. The same command
// with a valid plan writes keys there, so the check can see an enqueue when there is one.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { redisOptions } from '../../common/redis.js';
import { BAD_PLANS_DIR, badPlans } from '../helpers/bad-plans.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';

/** One of each kind: YAML, schema, cross-field, and a problem found only when reading the CA file. */
const REFUSED = [
  'yaml-syntax',
  'unknown-probe',
  'bad-cron',
  'duplicate-target',
  'duplicate-experiment-target',
  'missing-ca-file',
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
});
