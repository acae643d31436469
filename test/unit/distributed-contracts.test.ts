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
import { batchesOf, jobsPerRegion, PROBE_BATCH_SCHEMA } from '../../contracts/job.js';
import { JOB_LIMITS } from '../../contracts/limits.js';
import {
  reconnectOnReadonly,
  redactRedisUrl,
  redisOptions,
  redisTarget,
  refuseOtherKind,
  RedisKindError,
  RedisUrlError,
} from '../../common/redis.js';
import { checkRunDataSize, jobRefOf, jobsPerBatchFor } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { splitPlan } from '../../coordinator/split.js';
import {
  jobsPerRegionOf,
  RUN_JOB_SCHEMA,
  runJobDataSchema,
  runJobRefs,
  runJobsOf,
  type RunJobData,
} from '../../contracts/run-job.js';
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

/** The connector of a connection to one server: it refuses a connection to itself (a Sentinel's has ioredis's own). */
const SELF_REFUSING = redisOptions({ url: 'redis://127.0.0.1' }).Connector;

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
    assert.throws(() => redisOptions({ url: 'http://127.0.0.1' }), /unsupported Redis URL scheme "http:"/);
    assert.throws(() => redisOptions({ url: 'redis+sentinel://127.0.0.1/main' }), /unsupported Redis URL scheme/);
    assert.throws(() => redisOptions({ url: 'redis://127.0.0.1/x' }), /database "x" is not a number/);
    assert.throws(() => redisOptions({ url: 'not a url' }), /not a valid Redis URL/);
    assert.equal(redactRedisUrl('rediss://probe:s3cret@host:6380/0'), 'rediss://probe:***@host:6380/0');
    assert.equal(redactRedisUrl('redis://host:6379'), 'redis://host:6379');
    assert.equal(
      redactRedisUrl('redis-sentinel://probe:s3cret@a,b/main?db=1&sentinelPassword=s3cret2'),
      'redis-sentinel://probe:***@a,b/main?db=1&sentinelPassword=***',
    );
    assert.equal(redactRedisUrl('rediss-cluster://:s3cret@a:7000,b:7001'), 'rediss-cluster://:***@a:7000,b:7001');
  });

  test('redis-sentinel://: the sentinels (26379 by default), the primary by name, its database and credentials; TLS to both with rediss-sentinel://', () => {
    assert.deepEqual(redisTarget({ url: 'redis-sentinel://10.0.0.1,10.0.0.2:26380,[::1]:26381/main' }), {
      kind: 'sentinel',
      options: {
        sentinels: [
          { host: '10.0.0.1', port: 26379 },
          { host: '10.0.0.2', port: 26380 },
          { host: '::1', port: 26381 },
        ],
        name: 'main',
        db: 0,
        failoverDetector: true,
        reconnectOnError: reconnectOnReadonly,
        maxRetriesPerRequest: null,
        disconnectTimeout: 200,
      },
    });
    assert.deepEqual(
      redisTarget({
        url: 'rediss-sentinel://probe:p%40ss@s1.internal/main?db=3&sentinelUsername=watch&sentinelPassword=w%26p',
        caPem: 'PEM',
        commandTimeoutMs: 1500,
      }),
      {
        kind: 'sentinel',
        options: {
          sentinels: [{ host: 's1.internal', port: 26379 }],
          name: 'main',
          db: 3,
          username: 'probe',
          password: 'p@ss',
          sentinelUsername: 'watch',
          sentinelPassword: 'w&p',
          tls: { ca: 'PEM' },
          sentinelTLS: { ca: 'PEM' },
          enableTLSForSentinelMode: true,
          failoverDetector: true,
          reconnectOnError: reconnectOnReadonly,
          maxRetriesPerRequest: null,
          disconnectTimeout: 200,
          commandTimeout: 1500,
          connectTimeout: 1500,
        },
      },
    );
    // A demoted primary's READONLY reconnects (through the sentinels) and sends the command again.
    assert.equal(reconnectOnReadonly(new Error("READONLY You can't write against a read only replica.")), 2);
    assert.equal(reconnectOnReadonly(new Error('ERR wrong number of arguments')), false);
  });

  test('redis-cluster://: the nodes to learn the cluster from (6379 by default) and the credentials of every node; TLS with rediss-cluster://', () => {
    assert.deepEqual(redisTarget({ url: 'redis-cluster://10.0.0.1:7000,10.0.0.2' }), {
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 6379 },
      ],
      options: { redisOptions: { Connector: SELF_REFUSING, maxRetriesPerRequest: null, disconnectTimeout: 200 } },
    });
    assert.deepEqual(redisTarget({ url: 'rediss-cluster://probe:pw@c.internal:7000/', caPem: 'PEM' }), {
      kind: 'cluster',
      nodes: [{ host: 'c.internal', port: 7000 }],
      options: {
        redisOptions: {
          username: 'probe',
          password: 'pw',
          tls: { ca: 'PEM' },
          Connector: SELF_REFUSING,
          maxRetriesPerRequest: null,
          disconnectTimeout: 200,
        },
      },
    });
    assert.throws(() => redisOptions({ url: 'redis-cluster://10.0.0.1' }), /names a Redis Cluster, not one server/);
  });

  test('bad Sentinel and Cluster URLs are refused with the reason, passwords hidden', () => {
    for (const [url, reason] of [
      ['redis-sentinel://10.0.0.1:26379', /names no primary: redis-sentinel:\/\/host:26379/],
      ['redis-sentinel://10.0.0.1/main/extra', /names no primary/],
      ['redis-sentinel://10.0.0.1/main?db=x', /database "x" is not a number/],
      [
        'redis-sentinel://10.0.0.1/main?sentinelPasword=x',
        /unknown parameter "sentinelPasword" \(known: db, sentinelUsername, sentinelPassword\)/,
      ],
      ['redis-sentinel://10.0.0.1,,10.0.0.2/main', /"" is not host\[:port\]/],
      ['redis-sentinel://10.0.0.1:99999/main', /"10\.0\.0\.1:99999" is not host\[:port\]/],
      ['redis-cluster://:s3cret@10.0.0.1/2', /a Redis Cluster has no databases to choose \("\/2"\)/],
      ['redis-cluster://10.0.0.1?db=1', /unknown parameter "db" \(this kind of URL takes none\)/],
      ['redis-cluster://', /"" is not host\[:port\]/],
      ['redis-cluster://a@b@10.0.0.1', /is not host\[:port\]/],
      ['redis-sentinel://:s3cret@10.0.0.1', /names no primary/],
    ] as const) {
      assert.throws(
        () => redisTarget({ url }),
        (err: Error) => err instanceof RedisUrlError && reason.test(err.message) && !err.message.includes('s3cret'),
        url,
      );
    }
  });

  test('a Cluster node reached with a single-server or Sentinel URL is refused, naming the URL to use', () => {
    const clusterNode = '# Cluster\r\ncluster_enabled:1\r\n';
    assert.throws(
      () => refuseOtherKind({ url: 'redis://:pw@10.0.0.1:7000/0' }, clusterNode),
      (err: Error) =>
        err instanceof RedisKindError &&
        err.message ===
          'the Redis at redis://:***@10.0.0.1:7000/0 is a node of a Redis Cluster: use redis-cluster://10.0.0.1:7000[,host:port...] (rediss-cluster:// for TLS) naming some of its nodes; a single-server URL reaches only the keys that one node owns',
    );
    assert.throws(() => refuseOtherKind({ url: 'redis-sentinel://10.0.0.1/main' }, clusterNode), /a Sentinel URL/);
    refuseOtherKind({ url: 'redis://10.0.0.1' }, '# Cluster\r\ncluster_enabled:0\r\n');
    refuseOtherKind({ url: 'redis-cluster://10.0.0.1' }, clusterNode);
  });
});

test("a run's data lists each region's jobs once, and gives back every job in the order it was split", async () => {
  const loaded = await parsePlan(
    `name: listed-once
regions: [eu-west, us-east, ap-south]
targets:
  - { name: a, url: "http://127.0.0.1:8080/" }
  - { name: b, url: "http://127.0.0.1:8081/" }
experiments:
  - { probe: reuse }
  - { probe: load, targets: [b], requests: 40, workers: 2 }
`,
    'inline.yaml',
  );
  const runId = 'listed-once-20261204t000000z-abcd';
  const refs = splitPlan(loaded, runId).map(jobRefOf);
  assert.ok(
    refs.some((ref) => ref.shard),
    'shards among them',
  );
  const jobs = runJobsOf(runId, refs);
  assert.deepEqual(jobs.regions, ['eu-west', 'us-east', 'ap-south']);
  assert.equal(jobs.inEachRegion.length * 3, refs.length);
  const data = { runId, jobs };
  assert.deepEqual(runJobRefs(data), refs);
  // As the coordinator reads it back from Redis: a region listed twice would name batches twice.
  const whole = {
    schema: RUN_JOB_SCHEMA,
    runId,
    plan: loaded.plan,
    submittedAt: '2026-12-04T00:00:00.000Z',
    deadline: '2026-12-05T00:00:00.000Z',
    jobs,
    jobsPerBatch: 1,
  };
  assert.equal(runJobDataSchema.safeParse(whole).success, true);
  const twice = runJobDataSchema.safeParse({ ...whole, jobs: { ...jobs, regions: ['eu-west', 'us-east', 'eu-west'] } });
  assert.match(twice.error?.issues[0]?.message ?? '', /lists region "eu-west" twice/);
  assert.equal(runJobRefs(data), runJobRefs(data), 'listed once per data');
  assert.deepEqual([...jobsPerRegionOf(data)], [...jobsPerRegion(refs)]);
  // What a split plan never makes is a bug, said as one.
  assert.throws(() => runJobsOf(runId, refs.slice(0, -1)), /region "ap-south" has \d+ jobs, not \d+/);
  assert.throws(() => runJobsOf(runId, [...refs, refs[0]!]), /the jobs of region "eu-west" are not together/);
  const swapped = [...refs];
  [swapped[0], swapped[1]] = [swapped[1]!, swapped[0]!];
  assert.throws(() => runJobsOf(runId, swapped), /is not the one at its place in region "eu-west"/);
});

test("a run's data the coordinator could not read is refused before anything is written", async () => {
  const loaded = await parsePlan(
    'name: data-size\nregions: [a, b]\ntargets: [{ name: t, url: "http://127.0.0.1:8080/" }]\nexperiments: [{ probe: reuse }]\n',
    'inline.yaml',
  );
  const runId = 'data-size-20261204t000000z-abcd';
  const [job] = splitPlan(loaded, runId);
  const dataOf = (count: number): RunJobData => ({
    schema: RUN_JOB_SCHEMA,
    runId,
    plan: loaded.plan,
    submittedAt: '2026-12-04T00:00:00.000Z',
    deadline: '2026-12-05T00:00:00.000Z',
    jobs: runJobsOf(
      runId,
      ['a', 'b'].flatMap((region) =>
        Array.from({ length: count }, (_, i) => ({
          ...jobRefOf(job!),
          region,
          jobId: `${runId}.${region}.${job!.jobId.split('.').slice(2).join('.')}-${i}`,
        })),
      ),
    ),
    jobsPerBatch: 50,
  });
  // The jobs per region that make exactly the limit, give or take the length of their numbers:
  // what a region's jobs take, whatever the regions.
  const perJob = (JSON.stringify(dataOf(100_000)).length - JSON.stringify(dataOf(1)).length) / 99_999;
  const atLimit = Math.floor(JOB_LIMITS.runDataChars / perJob);
  assert.doesNotThrow(() => checkRunDataSize(dataOf(Math.floor(atLimit * 0.98))));
  assert.throws(
    () => checkRunDataSize(dataOf(Math.ceil(atLimit * 1.02))),
    /^TooManyJobsError: run data-size-20261204t000000z-abcd: [\d,]+ jobs in each region make a run's data of 32\.\d MiB, over the 32\.0 MiB the coordinator reads; split the plan into runs of fewer targets or experiments$/,
  );
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
    // One job per batch: each batch is named as its job, as in a run of fewer than 128 jobs per region.
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
