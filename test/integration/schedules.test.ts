// Schedules end to end: `probefleet schedule add --every` fires through a running coordinator
// into complete, stored runs; `schedule remove` stops it. Also the coordinator's /metrics and
// /healthz. Coordinator and worker run in this process (the same code the CLI starts).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { COORDINATOR_METRICS } from '../../contracts/metric-names.js';
import { createLogger } from '../../common/log.js';
import { startCoordinator, type RunningCoordinator } from '../../coordinator/coordinator-service.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { listSchedules } from '../../coordinator/schedule-list.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { countJobs } from '../../coordinator/split.js';
import { SCHEDULED_RUN_SCHEMA, scheduledRunDataSchema } from '../../contracts/run-job.js';
import { JOB_NAMES } from '../../contracts/queues.js';
import { openSignedData } from '../../common/job-signature.js';
import { startLab, type Lab } from '../../lab/index.js';
import { startRegionWorker, type RegionWorker } from '../../worker/queue-worker.js';
import { EMBEDDED_POLICY_SETTINGS, TargetPolicy } from '../../worker/target-policy.js';
import { writePlan } from '../helpers/plans.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';

const log = createLogger('test', 'silent');

describe('schedules', needsRedis, () => {
  const prefix = testPrefix();
  const redisArgs = ['--redis', TEST_REDIS_URL, '--prefix', prefix];
  let lab: Lab;
  let fleet: Fleet;
  let coordinator: RunningCoordinator;
  let worker: RegionWorker;

  before(async () => {
    requireRedis();
    lab = await startLab({ log });
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    coordinator = await startCoordinator({
      fleet,
      log,
      listen: { host: '127.0.0.1', port: 0 },
      sweepIntervalMs: 500,
      regions: ['a', 'quiet'],
    });
    worker = startRegionWorker({
      redis: { url: TEST_REDIS_URL },
      prefix,
      region: 'a',
      concurrency: 1,
      log,
      targetPolicy: new TargetPolicy(EMBEDDED_POLICY_SETTINGS),
    });
    await worker.ready;
  });
  after(async () => {
    await worker?.close(5_000);
    await coordinator?.close();
    await fleet?.close();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('a schedule with a short interval fires twice into two complete stored runs; schedule remove stops it', async () => {
    const plan = await writePlan(`
name: every-two
regions: [a]
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 5, modes: [reused, new] }]
`);
    const added = await runCli(['schedule', 'add', plan, '--every', '2', ...redisArgs]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /^schedule every-two: every 2 s, 2 jobs over a; next run \d{4}-\d\d-\d\dT/);
    const listed = await runCli(['schedule', 'list', '--json', ...redisArgs]);
    const [schedule] = JSON.parse(listed.stdout);
    assert.equal(schedule.name, 'every-two');
    assert.equal(schedule.everyMs, 2000);
    assert.ok(Date.parse(schedule.next) > Date.now() - 5_000);

    let runs = await fleet.store.list(10);
    for (let i = 0; i < 300 && runs.length < 2; i++) {
      await sleep(100);
      runs = await fleet.store.list(10);
    }
    assert.ok(runs.length >= 2, `two stored runs (got ${runs.length})`);
    const removed = await runCli(['schedule', 'remove', 'every-two', ...redisArgs]);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal((await runCli(['schedule', 'remove', 'every-two', ...redisArgs])).code, 1, 'nothing left to remove');

    for (const summary of runs) {
      const report = (await fleet.store.get(summary.runId))!;
      assert.equal(report.mode, 'distributed');
      assert.match(report.runId, /^every-two-\d{8}t\d{6}z$/);
      assert.equal(report.results.length, 2);
      assert.ok(report.results.every((r) => r.ok && r.region === 'a'));
      assert.equal(report.comparisons.length, 1);
    }
    assert.equal(new Set(runs.map((r) => r.runId)).size, runs.length);
    // The coordinator compared each fired run with the one before it and stored that beside its report.
    const ordered = [...runs].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    for (const [i, summary] of ordered.entries()) {
      let comparison = await fleet.store.getComparison(summary.runId);
      for (let n = 0; n < 50 && i > 0 && !comparison; n++) {
        await sleep(100);
        comparison = await fleet.store.getComparison(summary.runId);
      }
      assert.equal(comparison?.before.runId, i === 0 ? undefined : ordered[i - 1].runId, summary.runId);
    }

    // Removed: a firing already under way may still finish, nothing after it.
    await sleep(1_000);
    const settled = (await fleet.store.list(100)).length;
    await sleep(3_000);
    assert.equal((await fleet.store.list(100)).length, settled, 'no runs after schedule remove');
    assert.match((await runCli(['schedule', 'list', ...redisArgs])).stdout, /no schedules/);
  });

  test('the coordinator serves queue depths, job outcomes and run durations on /metrics, and /healthz', async () => {
    const health = await fetch(`${coordinator.url}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(await health.text(), 'ok\n');

    const text = await (await fetch(`${coordinator.url}/metrics`)).text();
    const M = COORDINATOR_METRICS;
    assert.match(text, new RegExp(`^${M.queueJobs.name}\\{region="quiet",state="waiting"\\} 0$`, 'm'));
    assert.match(text, new RegExp(`^${M.queueJobs.name}\\{region="a",state="active"\\} \\d+$`, 'm'));
    assert.match(text, new RegExp(`^${M.queueWorkers.name}\\{region="a"\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^${M.jobsFinished.name}\\{region="a",outcome="ok"\\} ([2-9]|\\d\\d+)$`, 'm'));
    assert.match(text, new RegExp(`^${M.runsFinished.name}\\{outcome="complete"\\} ([2-9]|\\d\\d+)$`, 'm'));
    assert.match(text, new RegExp(`^${M.runDuration.name}_count ([2-9]|\\d\\d+)$`, 'm'));
    assert.equal((await fetch(`${coordinator.url}/nothing`)).status, 404);
  });

  test("a fired schedule over the coordinator's limit on jobs fails at once, for good, and enqueues no job", async () => {
    // The plan passed `schedule add` under a higher limit than this coordinator's.
    const strictFleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix: `${prefix}-strict`, log });
    const strict = await startCoordinator({
      fleet: strictFleet,
      log,
      listen: { host: '127.0.0.1', port: 0 },
      maxJobs: 1,
    });
    try {
      const plan = await writePlan(`
name: over-limit
regions: [b]
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 1, modes: [reused, new] }]
`);
      const strictArgs = ['--redis', TEST_REDIS_URL, '--prefix', `${prefix}-strict`];
      const added = await runCli(['schedule', 'add', plan, '--every', '1', ...strictArgs]);
      assert.equal(added.code, 0, added.stderr);
      let failed = await strictFleet.runs.getFailed();
      for (let i = 0; i < 100 && failed.length === 0; i++) {
        await sleep(100);
        failed = await strictFleet.runs.getFailed();
      }
      assert.equal((await runCli(['schedule', 'remove', 'over-limit', ...strictArgs])).code, 0);
      assert.ok(failed.length > 0, 'the firing failed');
      assert.match(
        failed[0].failedReason,
        /: 2 jobs per run, over the limit of 1 \(--max-jobs or PROBEFLEET_MAX_JOBS raise it\)/,
      );
      assert.equal(failed[0].attemptsMade, 1, 'not retried');
      assert.equal(await strictFleet.regionQueue('b').count(), 0);
      assert.deepEqual(await strictFleet.store.list(10), []);
    } finally {
      await strict.close();
      await strictFleet.close();
      if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, `${prefix}-strict`);
    }
  });
});

describe('schedule list', needsRedis, () => {
  const prefix = testPrefix();
  let fleet: Fleet;

  before(() => {
    requireRedis();
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
  });
  after(async () => {
    await fleet?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test("reads BullMQ's keys of the schedules as BullMQ's getJobSchedulers does", async () => {
    // listSchedules reads them with the client alone, so that `schedule list` loads no BullMQ: an
    // upgrade of BullMQ that keeps its schedulers otherwise shows here. No coordinator: nothing fires.
    const redisArgs = ['--redis', TEST_REDIS_URL, '--prefix', prefix];
    const nightly = await writePlan(`
name: nightly
regions: [a, b]
targets: [{ name: http, url: "http://127.0.0.1:9/" }]
experiments: [{ probe: reuse, requests: 1, modes: [reused, new] }]
`);
    const hourly = await writePlan(`
name: hourly
targets: [{ name: http, url: "http://127.0.0.1:9/" }]
experiments: [{ probe: reuse, requests: 1, modes: [reused] }]
`);
    for (const added of [
      await runCli(['schedule', 'add', nightly, '--cron', '0 2 * * *', '--tz', 'Europe/Berlin', ...redisArgs]),
      await runCli(['schedule', 'add', hourly, '--every', '3600', ...redisArgs]),
    ])
      assert.equal(added.code, 0, added.stderr);

    const byBullmq = (await fleet.runs.getJobSchedulers(0, -1, true)).map((s) => {
      const { plan } = scheduledRunDataSchema.parse(openSignedData(s.template?.data, undefined));
      return {
        name: s.key,
        ...(s.pattern ? { cron: s.pattern, tz: s.tz ?? 'UTC' } : {}),
        ...(s.every ? { everyMs: Number(s.every) } : {}),
        ...(s.next ? { next: new Date(s.next) } : {}),
        regions: plan.regions,
        jobs: countJobs(plan).total,
      };
    });
    assert.equal(byBullmq.length, 2);
    assert.deepEqual(await listSchedules(fleet), byBullmq);
    const listed = await runCli(['schedule', 'list', '--json', ...redisArgs]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      JSON.parse(listed.stdout),
      byBullmq.map((s) => ({ ...s, next: s.next?.toISOString() })),
    );
  });

  test('lists a schedule kept without a summary from its plan, and one whose data is not a schedule with none', async () => {
    // As a schedule added before summaries were kept stores it: the plan, and nothing of what listing shows.
    const { plan } = await parsePlan(
      `
name: earlier
regions: [x, y, z]
targets: [{ name: http, url: "http://127.0.0.1:9/" }]
experiments: [{ probe: reuse, requests: 1, modes: [reused, new] }]
`,
      'earlier.yaml',
    );
    await fleet.runs.upsertJobScheduler(
      'earlier',
      { every: 7_200_000 },
      { name: JOB_NAMES.scheduledRun, data: { schema: SCHEDULED_RUN_SCHEMA, plan, tls: {} } },
    );
    await fleet.runs.upsertJobScheduler(
      'garbled',
      { every: 7_200_000 },
      { name: JOB_NAMES.scheduledRun, data: { schema: 'something else', summary: { regions: ['-'], jobs: -1 } } },
    );
    const listed = new Map((await listSchedules(fleet)).map((s) => [s.name, s]));
    assert.deepEqual([listed.get('earlier')?.regions, listed.get('earlier')?.jobs], [['x', 'y', 'z'], 6]);
    assert.deepEqual([listed.get('garbled')?.regions, listed.get('garbled')?.jobs], [[], 0]);
  });
});
