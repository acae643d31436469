// A full Redis (maxmemory reached under policy noeviction: every write refused with OOM), on a
// redis-server of the test's own whose maxmemory the test sets with CONFIG SET. Nothing is
// stubbed: the CLI, its workers and its coordinator are real processes. A submit into it ends with
// a clear error naming the run, and submitting again completes it; workers back off instead of
// spinning, say so on /metrics and /healthz, and resume once memory is freed; a report Redis is too
// full to store is shown anyway by `run` and stored by the coordinator once there is room
// (docs/distributed.md, "When Redis is full").
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, afterEach, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { regionQueueName, reportKeys, RUNS_QUEUE, SUBMISSIONS_QUEUE } from '../../contracts/queues.js';
import { runReportSchema } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { redisOptions } from '../../common/redis.js';
import { startLab, type Lab } from '../../lab/index.js';
import { writePlan } from '../helpers/plans.js';
import { spawnCli, startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { needsRedis, requireRedis, startOwnRedis, testPrefix, type OwnRedis } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');
/** The backoff's cap (common/redis-errors.ts), the longest a worker waits before it tries again. */
const BACKOFF_CAP_MS = 30_000;

/** `regions` × 40 targets × 40 experiments × 2 modes: 3,200 jobs per region, 64 batches of 50 each. */
function bigPlan(lab: Lab, name: string, regions: string[]): string {
  const targets = Array.from({ length: 40 }, (_, i) => `  - { name: t${i}, url: "${lab.url('keepalive')}" }`);
  const experiments = Array.from(
    { length: 40 },
    (_, i) => `  - { probe: reuse, requests: 1, modes: [reused, new], timeoutMs: ${5_000 + i} }`,
  );
  return [`name: ${name}`, `regions: [${regions.join(', ')}]`, 'targets:', ...targets, 'experiments:', ...experiments]
    .concat('')
    .join('\n');
}

/** Ten jobs of 300 reused requests each: a report of about 600 KiB (each request's sample is kept). */
function heavyPlan(lab: Lab, name: string, region: string): string {
  const targets = Array.from({ length: 10 }, (_, i) => `  - { name: t${i}, url: "${lab.url('keepalive')}" }`);
  return [
    `name: ${name}`,
    `regions: [${region}]`,
    'jobTimeoutSeconds: 30',
    'targets:',
    ...targets,
    'experiments:',
    '  - { probe: reuse, requests: 300, modes: [reused] }',
    '',
  ].join('\n');
}

async function httpGet(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, text: await res.text() };
}

function metricValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Polls `check` every 250 ms until it returns something, or fails after `timeoutMs`. */
async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > until) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await sleep(250);
  }
}

describe('Redis full (maxmemory, noeviction)', needsRedis, () => {
  let redis: OwnRedis;
  let client: Redis;
  let lab: Lab;
  const processes: CliProcess[] = [];

  /** Sets maxmemory; 0 lifts the limit. */
  const setMaxmemory = async (bytes: number) => void (await client.config('SET', 'maxmemory', String(bytes)));
  const usedMemory = async () => Number(/^used_memory:(\d+)/m.exec(await client.info('memory'))![1]);
  const oomErrors = async () => Number(/^errorstat_OOM:count=(\d+)/m.exec(await client.info('errorstats'))?.[1] ?? 0);

  before(async () => {
    requireRedis(); // redis-server comes with the same package
    redis = await startOwnRedis({ persistence: 'none', args: () => ['--maxmemory-policy', 'noeviction'] });
    client = new Redis(redisOptions({ url: redis.url }));
    lab = await startLab({ log });
  });
  // Each test starts with room, whatever the one before left.
  afterEach(async () => setMaxmemory(0));
  after(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    client?.disconnect();
    await redis?.stop();
    await lab?.close();
  });

  test('a submit into a full Redis exits 4 naming the run and the limit; submitting it again completes it and says what it added', async () => {
    const prefix = testPrefix();
    const plan = await writePlan(bigPlan(lab, 'full-submit', ['idle-a', 'idle-b']));
    const submit = (runId: string, ...extra: string[]) =>
      runCli(['run', plan, '--redis', redis.url, '--prefix', prefix, '--run-id', runId, '--detach', ...extra]);

    // Full before it starts: nothing goes in, and the run is named before the first write.
    await setMaxmemory(1);
    const refused = await submit('full-0');
    assert.equal(refused.code, 4, refused.stderr);
    assert.equal(refused.stdout, '');
    assert.match(
      refused.stderr.split('\n')[0]!,
      /^run full-0: submitting to redis:\/\/127\.0\.0\.1:\d+ \(prefix \{pftest-\w+\}\)$/,
    );
    assert.match(
      refused.stderr,
      /^probefleet: Redis is full \(maxmemory 1 B, policy noeviction, [\d.]+ MiB used\): run full-0 is not submitted \(nothing of it is in Redis\); free memory in Redis or raise its maxmemory .*; run full-0 may be in Redis in part: the same command with --run-id full-0 completes it$/m,
    );
    assert.doesNotMatch(refused.stderr, /OOM command not allowed/, "Redis's own text is not the message");

    // Full halfway: room for the run's parent and part of its batches (the whole run takes 3.7 to
    // 4.5 MiB; where the cut falls depends on how Redis meets the writes in flight).
    await setMaxmemory(0);
    await setMaxmemory((await usedMemory()) + 3_000_000);
    const cut = await submit('full-1', '--redis-timeout', '5');
    assert.equal(cut.code, 4, cut.stderr);
    const full =
      /^probefleet: Redis is full \(maxmemory [\d.]+ MiB, policy noeviction, [\d.]+ MiB used\): run full-1 is not fully submitted \((\d+) of 128 batches are in Redis\); /m.exec(
        cut.stderr,
      );
    assert.ok(full, cut.stderr);
    const inBefore = Number(full[1]);

    await setMaxmemory(0);
    const completed = await submit('full-1');
    assert.equal(completed.code, 0, completed.stderr);
    assert.equal(completed.stdout, 'full-1\n');
    assert.match(
      completed.stderr,
      new RegExp(`^completed run full-1: added ${128 - inBefore} of 128 batches to `, 'm'),
    );
    for (const region of ['idle-a', 'idle-b'])
      assert.equal(
        await client.llen(`${prefix}:${regionQueueName(region)}:wait`),
        64,
        `every batch of ${region}, once`,
      );
    assert.equal(await client.exists(`${prefix}:${SUBMISSIONS_QUEUE}:full-1`), 0, 'its gate is gone');
    assert.notEqual(await client.zscore(`${prefix}:${RUNS_QUEUE}:waiting-children`, 'full-1'), null);

    const again = await submit('full-1');
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /^run full-1 already submitted: nothing added to /m);
  });

  test('workers and the coordinator back off while Redis is full, say so on /healthz and /metrics, and resume once memory is freed', async () => {
    const prefix = testPrefix();
    const fleetArgs = ['--redis', redis.url, '--prefix', prefix];
    const plan = await writePlan(
      `name: full-workers\nregions: [w]\ntargets: [{ name: http, url: "${lab.url('keepalive')}" }]\nexperiments: [{ probe: reuse, requests: 2, modes: [reused, new] }]\n`,
    );
    const submitted = await runCli(['run', plan, ...fleetArgs, '--run-id', 'full-2', '--detach']);
    assert.equal(submitted.code, 0, submitted.stderr);
    // Nothing fits now: every write is refused until the limit is lifted.
    await setMaxmemory(1);
    const worker = await startWorkerProcess('w', redis.url, prefix, ['--metrics-port', '0']);
    const coordinator = spawnCli(['coordinator', ...fleetArgs, '--port', '0', '--sweep-interval-ms', '500']);
    processes.push(worker, coordinator);
    await coordinator.waitFor(/"msg":"coordinator ready"/);
    const workerUrl = /"metrics":"(http:\/\/[^"]+)\/metrics"/.exec(worker.stderr())![1]!;
    const coordinatorUrl = /"url":"(http:\/\/[^"]+)"/.exec(coordinator.stderr())![1]!;

    // A worker that spun would fail thousands of scripts a second; backing off, a handful in 8 s.
    const errorsBefore = await oomErrors();
    await sleep(8_000);
    const refusals = (await oomErrors()) - errorsBefore;
    assert.ok(refusals <= 20, `${refusals} writes refused in 8 s`);

    const workerHealth = await httpGet(`${workerUrl}/healthz`);
    assert.equal(workerHealth.status, 503, workerHealth.text);
    assert.match(
      workerHealth.text,
      /^Redis refused to hand out a job \(OOM command not allowed.*\); trying again every \d+ s\n$/,
    );
    const workerMetrics = (await httpGet(`${workerUrl}/metrics`)).text;
    assert.ok((metricValue(workerMetrics, 'probefleet_redis_errors_total{kind="oom"}') ?? 0) >= 1, workerMetrics);
    const coordinatorHealth = await httpGet(`${coordinatorUrl}/healthz`);
    assert.equal(coordinatorHealth.status, 503, coordinatorHealth.text);
    assert.match(
      coordinatorHealth.text,
      /^Redis is full \(maxmemory 1 B, policy noeviction, [\d.]+ MiB used\): writes are refused\n/,
    );
    assert.equal(
      metricValue((await httpGet(`${coordinatorUrl}/metrics`)).text, 'probefleet_redis_errors_total{kind="oom"}') !==
        undefined,
      true,
    );

    await setMaxmemory(0);
    const shown = await eventually('the run reported once memory is freed', BACKOFF_CAP_MS + 30_000, async () => {
      const show = await runCli(['runs', 'show', 'full-2', '--json', ...fleetArgs]);
      return show.code === 0 ? show.stdout : undefined;
    });
    const report = runReportSchema.parse(JSON.parse(shown));
    assert.equal(report.results.length, 2);
    assert.deepEqual(report.unfinishedJobs, []);
    for (const url of [workerUrl, coordinatorUrl]) {
      const health = await eventually(`${url}/healthz ok`, 10_000, async () => {
        const h = await httpGet(`${url}/healthz`);
        return h.status === 200 ? h : undefined;
      });
      assert.equal(health.text, 'ok\n');
    }
    await Promise.all([worker.stop(), coordinator.stop()]);
  });

  test('a report Redis is too full to store: run says so, tries for --redis-timeout and prints it anyway; the coordinator stores it once there is room', async () => {
    const prefix = testPrefix();
    const fleetArgs = ['--redis', redis.url, '--prefix', prefix];
    const worker = await startWorkerProcess('h', redis.url, prefix);
    processes.push(worker);
    const plan = await writePlan(heavyPlan(lab, 'full-report', 'h'));
    const detached = await runCli(['run', plan, ...fleetArgs, '--run-id', 'full-3', '--detach']);
    assert.equal(detached.code, 0, detached.stderr);
    // Every job done (no coordinator yet): the parent waits in the runs queue, its children's results on it.
    await eventually('the run done', 60_000, async () =>
      (await client.llen(`${prefix}:${RUNS_QUEUE}:wait`)) === 1 ? true : undefined,
    );
    // SAMPLES 0: every field counted (the default estimates a hash from 5 of its fields, which varies run to run).
    const resultsBytes = Number(await client.memory('USAGE', `${prefix}:${RUNS_QUEUE}:full-3:processed`, 'SAMPLES', 0));
    assert.ok(resultsBytes > 300_000, `results of ${resultsBytes} B`);
    // Room for small writes, not for the report: Redis counts the bytes of the command that stores it.
    await setMaxmemory((await usedMemory()) + Math.round(resultsBytes / 2));

    const dir = tempDir('probefleet-full-');
    const json = path.join(dir, 'run.json');
    const ran = await runCli(['run', plan, ...fleetArgs, '--run-id', 'full-3', '--json', json, '--redis-timeout', '3']);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(
      ran.stderr,
      /^run full-3: cannot store its report: Redis is full \(maxmemory [\d.]+ MiB, policy noeviction, [\d.]+ MiB used\): cannot store the (report|results) of run full-3 \((a page of )?\d+ KiB\); .*; trying again for 3 s$/m,
    );
    assert.match(
      ran.stderr,
      /^run full-3: its report is not stored \(Redis is still full\); here it is as built\. A coordinator stores it once Redis has room/m,
    );
    assert.doesNotMatch(ran.stderr, /cannot read the run/);
    const printed = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8')));
    assert.equal(printed.results.length, 10, 'the report as built, with every result');
    assert.equal(await client.exists(reportKeys.report(prefix, 'full-3')), 0, 'not stored');

    // The coordinator takes the finished run (it fits: its parent is small) and cannot store its
    // report either: it keeps the run and tries again, saying so, until Redis has room.
    const coordinator = spawnCli(['coordinator', ...fleetArgs, '--port', '0', '--sweep-interval-ms', '500']);
    processes.push(coordinator);
    await coordinator.waitFor(/"msg":"coordinator ready"/);
    const coordinatorUrl = /"url":"(http:\/\/[^"]+)"/.exec(coordinator.stderr())![1]!;
    await coordinator.waitFor(/"msg":"Redis is full: trying again later"/, 30_000);
    const health = await httpGet(`${coordinatorUrl}/healthz`);
    assert.equal(health.status, 503, health.text);
    assert.match(health.text, /^run full-3: Redis is full \(.*\): cannot store the (report|results) of run full-3/m);

    await setMaxmemory(0);
    const stored = await eventually('the report stored by the coordinator', BACKOFF_CAP_MS + 30_000, async () => {
      const show = await runCli(['runs', 'show', 'full-3', '--json', ...fleetArgs]);
      return show.code === 0 ? show.stdout : undefined;
    });
    const report = runReportSchema.parse(JSON.parse(stored));
    assert.deepEqual(
      report.results.map((r) => r.jobId).sort(),
      printed.results.map((r) => r.jobId).sort(),
      'the stored report has the jobs `run` printed',
    );
    assert.equal(await client.zcard(`${prefix}:${RUNS_QUEUE}:failed`), 0, 'the run never failed for good');
    await coordinator.stop();
    await worker.stop();
  });
});
