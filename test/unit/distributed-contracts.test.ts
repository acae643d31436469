import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DEFAULT_QUEUE_PREFIX,
  jobKey,
  parseJobKey,
  prefixProblem,
  regionOfQueue,
  regionQueueName,
} from '../../contracts/queues.js';
import { batchesOf, PROBE_BATCH_SCHEMA } from '../../contracts/job.js';
import { JOB_LIMITS } from '../../contracts/limits.js';
import { redactRedisUrl, redisOptions } from '../../common/redis.js';
import { jobsPerBatchFor } from '../../coordinator/flow.js';
import { jobsOf } from '../helpers/plans.js';

describe('queue names and prefixes', () => {
  test('a prefix needs one hash tag and no ":"', () => {
    assert.equal(prefixProblem(DEFAULT_QUEUE_PREFIX), undefined);
    assert.equal(prefixProblem('{fleet}-staging'), undefined);
    for (const bad of ['probefleet', '{}', '{a}{b}', 'pf:{a}', '{a b}', ''])
      assert.match(prefixProblem(bad) ?? '', /hash tag/, bad);
  });

  test('region queues and job keys round-trip', () => {
    assert.equal(regionQueueName('eu-west'), 'probe.eu-west');
    assert.doesNotMatch(regionQueueName('eu-west'), /:/);
    assert.equal(regionOfQueue('probe.eu-west'), 'eu-west');
    assert.equal(regionOfQueue('runs'), undefined);
    const key = jobKey('{pf}', 'probe.a', 'run-1.a.http.reuse-new-http-0123456789');
    assert.equal(key, '{pf}:probe.a:run-1.a.http.reuse-new-http-0123456789');
    assert.deepEqual(parseJobKey('{pf}', key), {
      queueName: 'probe.a',
      jobId: 'run-1.a.http.reuse-new-http-0123456789',
    });
    assert.equal(parseJobKey('{other}', key), undefined);
  });
});

/** The options for a URL, without the connector every one of them has (it refuses a connection to itself). */
function optionsOf(settings: Parameters<typeof redisOptions>[0]) {
  const { Connector, ...options } = redisOptions(settings);
  assert.equal(Connector?.name, 'SelfRefusingConnector');
  return options;
}

describe('Redis URLs', () => {
  test('user, password, database and TLS come from the URL; a CA given beside it is kept', () => {
    assert.deepEqual(optionsOf({ url: 'redis://127.0.0.1:6379' }), {
      host: '127.0.0.1',
      port: 6379,
      db: 0,
      maxRetriesPerRequest: null,
      disconnectTimeout: 200,
    });
    assert.deepEqual(optionsOf({ url: 'rediss://probe:p%40ss@redis.internal:6380/2', caPem: 'PEM' }), {
      host: 'redis.internal',
      port: 6380,
      db: 2,
      username: 'probe',
      password: 'p@ss',
      tls: { servername: 'redis.internal', ca: 'PEM' },
      maxRetriesPerRequest: null,
      disconnectTimeout: 200,
    });
    assert.deepEqual(optionsOf({ url: 'redis://:secret@[::1]' }), {
      host: '::1',
      port: 6379,
      db: 0,
      password: 'secret',
      maxRetriesPerRequest: null,
      disconnectTimeout: 200,
    });
    // A command that ends bounds every command, and its connecting, by its timeout.
    assert.deepEqual(
      { ...optionsOf({ url: 'redis://127.0.0.1', commandTimeoutMs: 1500 }), host: undefined },
      {
        host: undefined,
        port: 6379,
        db: 0,
        maxRetriesPerRequest: null,
        disconnectTimeout: 200,
        commandTimeout: 1500,
        connectTimeout: 1500,
      },
    );
  });

  test('bad URLs are refused with the reason; passwords never reach messages', () => {
    assert.throws(() => optionsOf({ url: 'http://127.0.0.1' }), /unsupported Redis URL scheme "http:"/);
    assert.throws(() => optionsOf({ url: 'redis://127.0.0.1/x' }), /database "x" is not a number/);
    assert.throws(() => optionsOf({ url: 'not a url' }), /not a valid Redis URL/);
    assert.equal(redactRedisUrl('rediss://probe:s3cret@host:6380/0'), 'rediss://probe:***@host:6380/0');
    assert.equal(redactRedisUrl('redis://host:6379'), 'redis://host:6379');
  });
});

describe('batches of probe jobs', () => {
  const ref = (region: string, n: number) => ({ jobId: `run.${region}.${n}`, region });

  test("a run's jobs are cut into consecutive batches of one region, each named by its first job", () => {
    const jobs = [ref('a', 0), ref('a', 1), ref('a', 2), ref('b', 0), ref('b', 1), ref('a', 3)];
    assert.deepEqual(
      batchesOf(jobs, 2).map((batch) => [batch.id, batch.region, batch.jobs.map((job) => job.jobId)]),
      [
        ['run.a.0', 'a', ['run.a.0', 'run.a.1']],
        ['run.a.2', 'a', ['run.a.2']],
        ['run.b.0', 'b', ['run.b.0', 'run.b.1']],
        ['run.a.3', 'a', ['run.a.3']],
      ],
    );
    // One job per batch: each batch is named as its job, as before batches.
    assert.deepEqual(
      batchesOf(jobs, 1).map((batch) => batch.id),
      jobs.map((job) => job.jobId),
    );
  });

  test('jobs per batch: one for small runs, more for big ones, bounded by the cap and by the data a worker reads', async () => {
    const [job] = await jobsOf(`
name: batching
regions: [a]
targets: [{ name: t, url: "http://127.0.0.1:8080/" }]
experiments: [{ probe: reuse, requests: 1, modes: [new] }]
`);
    const many = (count: number, regions = ['a'], pad = '') =>
      regions.flatMap((region) =>
        Array.from({ length: count }, (_, i) => ({
          ...job!,
          jobId: `${region}-${i}`,
          region,
          target: { ...job!.target, headers: pad ? { 'x-pad': pad } : undefined },
        })),
      );
    assert.equal(jobsPerBatchFor(many(127)), 1, 'fewer than 2 × 64 jobs in a region: one job per BullMQ job');
    assert.equal(jobsPerBatchFor(many(128)), 2);
    assert.equal(jobsPerBatchFor(many(100, ['a', 'b', 'c'])), 1, 'by the busiest region, not the total');
    assert.equal(jobsPerBatchFor(many(2_000, ['a'])), 31);
    assert.equal(jobsPerBatchFor(many(10_000)), JOB_LIMITS.jobsPerBatch);
    // 8 KB of headers per job: a batch of them stays under a quarter of what a worker reads.
    const padded = many(10_000, ['a'], 'x'.repeat(8_000));
    const perBatch = jobsPerBatchFor(padded);
    assert.ok(perBatch > 1 && perBatch < JOB_LIMITS.jobsPerBatch, String(perBatch));
    const batchChars = JSON.stringify({ schema: PROBE_BATCH_SCHEMA, jobs: padded.slice(0, perBatch) }).length;
    assert.ok(batchChars <= JOB_LIMITS.jobDataChars / 4, `${batchChars} characters`);
  });
});
