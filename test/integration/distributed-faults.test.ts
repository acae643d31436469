// Faults in a distributed run: a worker killed with SIGKILL in the middle of a job (with another
// worker of its region left, and without), a worker stopped with SIGTERM while a job runs, and
// Redis restarted mid-run (a redis-server of the test's own, append-only). Workers and
// coordinators are the real CLI in their own processes.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { Queue } from 'bullmq';
import { jobKey, regionQueueName, reportKeys } from '../../contracts/queues.js';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { startCoordinator } from '../../coordinator/coordinator-service.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { submitRun, type SubmittedRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { startLab, type Lab } from '../../lab/index.js';
import { writePlan } from '../helpers/plans.js';
import { spawnCli, startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import {
  deletePrefix,
  needsRedis,
  requireRedis,
  startOwnRedis,
  TEST_REDIS_URL,
  testPrefix,
  type OwnRedis,
} from '../helpers/redis.js';
import { tempDir } from '../helpers/temp-dir.js';
import { runningKey } from '../../worker/run-results.js';

const log = createLogger('test', 'silent');
const quiet = { update() {}, done() {} };
/** A stall timeout short enough for a test: a lost worker's job is back in its queue within 4 s. */
const STALL_TIMEOUT_SECONDS = 4;
const FAST_STALL = ['--stall-timeout-seconds', String(STALL_TIMEOUT_SECONDS)];
/** The stall timeout where a pick-up is timed: longer, so that what a busy machine adds stays far
 * from what a wrong bound would add. */
const TIMED_STALL_SECONDS = 8;
const TIMED_STALL = ['--stall-timeout-seconds', String(TIMED_STALL_SECONDS)];
/**
 * Slack on the stall bound when timing a pick-up. The bound itself is exact: the lock (half the
 * stall timeout) expires at most half the timeout after its last renewal, and the stall check
 * (every half) that marked the job after that renewal moves it at its next run. Alone on the
 * machine the pick-up comes just under the timeout after the kill; where these timers run in worker
 * processes that share 2 vCPUs with the rest of the suite it came up to 3.3 s later (7.3 s with a
 * timeout of 4 s). A pick-up at twice the bound (what a lock and a check interval each as long as
 * the whole timeout would give: 16 s) still fails.
 */
const PICK_UP_SLACK_MS = 6_000;
/** Debian's libfaketime: LD_PRELOADed, it moves a process's wall clock. */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/** Two jobs in region a: a slow one (reused requests to the Nagle endpoint wait ~40 ms each) first, then a quick one. */
function slowPlan(lab: Lab, name: string, slowRequests: number): string {
  return `
name: ${name}
regions: [a]
jobTimeoutSeconds: 60
targets:
  - { name: slow, url: "${lab.url('keepalive', '/nagle')}" }
  - { name: quick, url: "${lab.url('keepalive')}" }
experiments:
  - { probe: reuse, targets: [slow], requests: ${slowRequests}, modes: [reused] }
  - { probe: reuse, targets: [quick], requests: 5, modes: [new] }
`;
}

/** Waits until the coordinator's /metrics shows the series at the value. */
async function waitForMetric(url: string, series: string, value: number, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  let text = '';
  while (Date.now() < until) {
    text = await (await fetch(`${url}/metrics`)).text();
    if (text.split('\n').includes(`${series} ${value}`)) return;
    await sleep(100);
  }
  assert.fail(
    `no "${series} ${value}" on ${url}/metrics:\n${text
      .split('\n')
      .filter((l) => l.includes(series.split('{')[0]))
      .join('\n')}`,
  );
}

/** The first active job whose id matches, and the pid of the worker process holding it
 * (workers are named <host>-<pid>, and BullMQ records the name on the job). */
async function activeJob(
  queue: Queue,
  idPattern = /./,
  timeoutMs = 30_000,
): Promise<{ id: string; workerPid: number }> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const active = (await queue.getActive()).find((job) => job.id && idPattern.test(job.id));
    if (active?.id && active.processedBy)
      return { id: active.id, workerPid: Number(active.processedBy.split('-').at(-1)) };
    await sleep(50);
  }
  throw new Error(`no job matching ${idPattern} became active`);
}

/** The run's report, once it is over, with a result for every job and for no job twice. */
async function everyJobOnce(fleet: Fleet, run: SubmittedRun): Promise<RunReport> {
  const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
  assert.ok(report);
  assert.deepEqual(report.unfinishedJobs, []);
  assert.deepEqual(
    report.results.map((r) => r.jobId).sort(),
    run.jobs.map((j) => j.jobId).sort(),
    'every job exactly once',
  );
  return report;
}

describe('faults in distributed runs', needsRedis, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let fleet: Fleet;
  const processes: CliProcess[] = [];

  before(async () => {
    requireRedis();
    lab = await startLab({ log });
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await fleet?.close();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('kill -9 of a worker in the middle of a job: another worker takes it within the stall timeout, the report says so, every job counted once', async () => {
    const pair = await Promise.all([
      startWorkerProcess('a', TEST_REDIS_URL, prefix, TIMED_STALL),
      startWorkerProcess('a', TEST_REDIS_URL, prefix, TIMED_STALL),
    ]);
    processes.push(...pair);
    const coordinator = await startCoordinator({ fleet, log, listen: { host: '127.0.0.1', port: 0 } });
    try {
      const run = await submitRun(
        fleet,
        await parsePlan(slowPlan(lab, 'killed', 100), 'inline.yaml'),
        'killed-worker-run',
      );
      const { id: slowJob, workerPid } = await activeJob(fleet.regionQueue('a'), /\.slow\./);
      const first = pair.find((w) => w.pid === workerPid)!;
      const second = pair.find((w) => w.pid !== workerPid)!;
      assert.ok(first, `the job is held by one of our workers (pid ${workerPid})`);
      first.child.kill('SIGKILL');
      const killedAt = Date.now();
      assert.equal(await first.stop(), null, 'killed, not exited');

      const report = await everyJobOnce(fleet, run);
      const slow = report.results.find((r) => r.jobId === slowJob)!;
      assert.equal(slow.worker.pid, second.pid, 'the job was measured again, whole, by the surviving worker');
      assert.equal(slow.summary.requests, 100);
      const pickedUpMs = Date.parse(slow.startedAt) - killedAt;
      assert.ok(
        pickedUpMs <= TIMED_STALL_SECONDS * 1000 + PICK_UP_SLACK_MS,
        `taken again ${pickedUpMs} ms after the kill (stall timeout ${TIMED_STALL_SECONDS} s)`,
      );
      assert.equal(slow.workersLost, 1, 'the result says its first worker was lost');
      assert.match(renderRunReport(report), /RETRIED its worker was lost while running it \(its lock expired/);
      // The worker whose stall check found it said so, at warn (level 40).
      await second.waitFor(new RegExp(`"level":40.*"jobId":"${slowJob.replaceAll('.', '\\.')}".*"msg":"job stalled`));
      // The coordinator counts it when it finishes the run.
      await waitForMetric(coordinator.url, 'probefleet_jobs_stalled_total{region="a"}', 1);
    } finally {
      // Stopped whatever failed above: a worker left running takes the next tests' jobs.
      await Promise.all(pair.map((worker) => worker.stop()));
      await coordinator.close();
    }
  });

  test('kill -9 of a worker in the middle of a batch: another worker resumes it after the job saved last, each job once in the report', async () => {
    const pair = await Promise.all([
      startWorkerProcess('a', TEST_REDIS_URL, prefix, FAST_STALL),
      startWorkerProcess('a', TEST_REDIS_URL, prefix, FAST_STALL),
    ]);
    processes.push(...pair);
    try {
      // Two slow jobs in one BullMQ job: ~1.2 s, then ~6 s of reused requests to the Nagle endpoint.
      const plan = `
name: killed-batch
regions: [a]
jobTimeoutSeconds: 60
targets:
  - { name: slow, url: "${lab.url('keepalive', '/nagle')}" }
experiments:
  - { probe: reuse, requests: 30, modes: [reused] }
  - { probe: reuse, requests: 150, modes: [reused] }
`;
      const run = await submitRun(fleet, await parsePlan(plan, 'inline.yaml'), 'killed-batch-run', { jobsPerBatch: 2 });
      const [firstJob, secondJob] = run.jobs.map((job) => job.jobId);
      const { id: batchId, workerPid } = await activeJob(fleet.regionQueue('a'), /\.slow\./);
      const first = pair.find((w) => w.pid === workerPid)!;
      const second = pair.find((w) => w.pid !== workerPid)!;
      // Killed once the first job's result is saved and the second has run long enough to be noted
      // as the one running (a job is noted after 20 ms: queue-worker.ts, NOTE_RUNNING_AFTER_MS).
      const results = reportKeys.results(prefix, run.runId);
      for (let i = 0; i < 200 && !(await fleet.client.hexists(results, firstJob!)); i++) await sleep(50);
      assert.equal(await fleet.client.hexists(results, firstJob!), 1, 'the first job was saved');
      const note = runningKey(jobKey(prefix, regionQueueName('a'), batchId));
      for (let i = 0; i < 200 && (await fleet.client.get(note)) !== secondJob; i++) await sleep(50);
      assert.equal(await fleet.client.get(note), secondJob, 'the second job is noted as running');
      first.child.kill('SIGKILL');
      assert.equal(await first.stop(), null, 'killed, not exited');

      const report = await everyJobOnce(fleet, run);
      const resultOf = (jobId: string) => report.results.find((r) => r.jobId === jobId)!;
      assert.equal(resultOf(firstJob!).worker.pid, first.pid, 'the saved job is kept, not measured again');
      assert.equal(resultOf(firstJob!).workersLost, undefined);
      assert.equal(resultOf(secondJob!).worker.pid, second.pid, 'the job cut off is measured again, whole');
      assert.equal(resultOf(secondJob!).summary.requests, 150);
      assert.equal(resultOf(secondJob!).workersLost, 1, "the result says its batch's first worker was lost");
    } finally {
      await Promise.all(pair.map((worker) => worker.stop()));
    }
  });

  test('kill -9 of the only worker of a region mid-job: at the deadline the report names the worker that was lost', async () => {
    const worker = await startWorkerProcess('a', TEST_REDIS_URL, prefix, FAST_STALL);
    processes.push(worker);
    const run = await submitRun(
      fleet,
      await parsePlan(slowPlan(lab, 'orphaned', 100), 'inline.yaml'),
      'orphaned-job-run',
      { deadlineSeconds: 3 },
    );
    const { id: slowJob } = await activeJob(fleet.regionQueue('a'), /\.slow\./);
    worker.child.kill('SIGKILL');
    await worker.stop();

    const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
    assert.ok(report);
    const lost = report.unfinishedJobs.find((u) => u.jobId === slowJob);
    assert.ok(lost, 'the job has no result');
    assert.equal(lost.status, 'not-run');
    assert.equal(lost.workersLost, 1);
    assert.match(
      lost.reason,
      new RegExp(
        `^its worker \\(\\S+-${worker.pid}\\) was lost while running it \\(its lock expired: killed, hung or cut off from Redis\\), and no worker of region "a" took it again before the run's deadline`,
      ),
    );
    const quick = report.unfinishedJobs.find((u) => u.target === 'quick');
    assert.match(quick?.reason ?? '', /^no worker of region "a" took it before the run's deadline/);
  });

  /** Each result's times lie within its run's, all on Redis's clock, whatever the worker's says. */
  function assertTimesWithinRun(report: RunReport): void {
    const [started, finished] = [Date.parse(report.startedAt), Date.parse(report.finishedAt)];
    // The worker's offset from Redis's clock is read over a round trip: its error is a few ms.
    const slackMs = 1_000;
    assert.ok(finished - started < 60_000, `the run took ${finished - started} ms`);
    for (const result of report.results) {
      assert.ok(
        Date.parse(result.startedAt) >= started - slackMs,
        `${result.jobId} started ${result.startedAt}, before the run (${report.startedAt})`,
      );
      assert.ok(
        Date.parse(result.finishedAt) <= finished + slackMs,
        `${result.jobId} finished ${result.finishedAt}, after the run (${report.finishedAt})`,
      );
    }
  }

  for (const [skew, fastOrSlow] of [
    ['+10m', 'fast'],
    ['-10m', 'slow'],
  ] as const) {
    test(`a worker whose clock is 10 minutes ${fastOrSlow} keeps the run's deadline, and its results' times are the run's: both are on Redis's clock`, async (t) => {
      if (!existsSync(LIBFAKETIME)) {
        if (process.env.CI === 'true') assert.fail(`${LIBFAKETIME} is missing: run bash test/services/ensure.sh`);
        // Outside CI a machine may lack it; the skip says how to get it.
        return t.skip(`no ${LIBFAKETIME}: apt-get install libfaketime (bash test/services/ensure.sh)`);
      }
      const worker = await startWorkerProcess('a', TEST_REDIS_URL, prefix, [], {
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME: skew,
        // Timers and durations stay true: only the wall clock is off, as on a machine without NTP.
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      });
      processes.push(worker);
      if (fastOrSlow === 'fast') {
        const loaded = await parsePlan(slowPlan(lab, 'skewed-fast', 2), 'inline.yaml');
        // Six minutes to the deadline: on the worker's clock it passed four minutes ago.
        const run = await submitRun(fleet, loaded, 'skewed-fast-run', { deadlineSeconds: 360 });
        assertTimesWithinRun(await everyJobOnce(fleet, run));
        assert.doesNotMatch(worker.stderr(), /run deadline passed/);
      } else {
        // One batch of four jobs of ~1.6 s each and a deadline 3 s away: on the worker's clock the
        // deadline is ten minutes off, on Redis's it comes during the second job.
        const plan = `
name: skewed-slow
regions: [a]
jobTimeoutSeconds: 60
targets:
${[1, 2, 3, 4].map((i) => `  - { name: s${i}, url: "${lab.url('keepalive', `/nagle?job=${i}`)}" }`).join('\n')}
experiments:
  - { probe: reuse, requests: 40, modes: [reused] }
`;
        const run = await submitRun(fleet, await parsePlan(plan, 'inline.yaml'), 'skewed-slow-run', {
          deadlineSeconds: 3,
          jobsPerBatch: 4,
        });
        const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
        assert.ok(report);
        assert.ok(report.results.length >= 1, 'the jobs before the deadline ran');
        assert.ok(report.unfinishedJobs.length >= 1, 'the batch stopped at the deadline');
        assert.ok(report.unfinishedJobs.every((job) => job.status === 'not-run'));
        assert.match(worker.stderr(), /run deadline passed/);
        assertTimesWithinRun(report);
      }
      assert.equal(await worker.stop(), 0); // region a's next tests want workers of their own
    });
  }

  test("the coordinator down when a run finishes: the report, built once it is back, ends when the run's last job did", async () => {
    const worker = await startWorkerProcess('a', TEST_REDIS_URL, prefix);
    processes.push(worker);
    try {
      const run = await submitRun(
        fleet,
        await parsePlan(slowPlan(lab, 'unattended', 2), 'inline.yaml'),
        'unattended-run',
      );
      for (let i = 0; i < 300 && (await fleet.runs.getJobState(run.runId)) === 'waiting-children'; i++)
        await sleep(100);
      assert.notEqual(await fleet.runs.getJobState(run.runId), 'waiting-children', 'every job is done');
      // The coordinator comes back three seconds later.
      await sleep(3_000);
      const backAt = Date.now();
      const coordinator = await startCoordinator({ fleet, log, listen: { host: '127.0.0.1', port: 0 } });
      let report: RunReport | undefined;
      try {
        for (let i = 0; i < 200 && !report; i++) {
          report = await fleet.store.get(run.runId);
          if (!report) await sleep(100);
        }
      } finally {
        await coordinator.close();
      }
      assert.ok(report, 'the coordinator stored the report');
      const lastJob = Math.max(...report.results.map((r) => Date.parse(r.finishedAt)));
      assert.equal(Date.parse(report.finishedAt), lastJob);
      assert.ok(backAt - Date.parse(report.finishedAt) >= 2_500, "the coordinator's downtime is not in the run's time");
    } finally {
      await worker.stop();
    }
  });

  test('SIGTERM while a job runs: the worker hands the job back within its grace period and exits 0; another worker finishes it', async () => {
    const worker = await startWorkerProcess('a', TEST_REDIS_URL, prefix, ['--shutdown-grace-seconds', '1']);
    processes.push(worker);
    const run = await submitRun(
      fleet,
      await parsePlan(slowPlan(lab, 'stopped', 80), 'inline.yaml'),
      'stopped-worker-run',
    );
    const { id: slowJob } = await activeJob(fleet.regionQueue('a'), /\.slow\./);
    const stoppedAt = Date.now();
    assert.equal(await worker.stop('SIGTERM'), 0);
    assert.ok(Date.now() - stoppedAt < 8_000, 'within the grace period and the hand-back bound');
    assert.match(worker.stderr(), /"outcome":"handed-back"/);
    assert.equal(
      await (await fleet.regionQueue('a').getJob(slowJob))!.getState(),
      'waiting',
      'back in the queue, not failed',
    );

    const next = await startWorkerProcess('a', TEST_REDIS_URL, prefix);
    processes.push(next);
    try {
      const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
      assert.ok(report);
      assert.deepEqual(report.unfinishedJobs, []);
      assert.equal(report.results.find((r) => r.jobId === slowJob)?.worker.pid, next.pid);
      assert.equal(report.results.find((r) => r.jobId === slowJob)?.summary.requests, 80);
    } finally {
      await next.stop();
    }
  });
});

describe('Redis restarted in the middle of a run', needsRedis, () => {
  let redis: OwnRedis;
  let lab: Lab;
  const processes: CliProcess[] = [];

  before(async () => {
    requireRedis(); // redis-server comes with the same package
    redis = await startOwnRedis();
    lab = await startLab({ log });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await lab?.close();
    await redis?.stop();
  });

  test('workers, the coordinator and the waiting run command reconnect, and the run completes', async () => {
    const prefix = testPrefix();
    const redisArgs = ['--redis', redis.url, '--prefix', prefix];
    const worker = await startWorkerProcess('a', redis.url, prefix);
    const coordinator = spawnCli(['coordinator', ...redisArgs, '--port', '0', '--sweep-interval-ms', '500']);
    processes.push(worker, coordinator);
    await coordinator.waitFor(/"msg":"coordinator ready"/);

    const dir = tempDir('probefleet-restart-');
    const json = path.join(dir, 'run.json');
    const plan = await writePlan(slowPlan(lab, 'restarted', 80));
    const run = spawnCli(['run', plan, ...redisArgs, '--run-id', 'restarted-run', '--json', json]);
    processes.push(run);

    const probe = openFleet({ redis: { url: redis.url }, prefix, log });
    try {
      await activeJob(probe.regionQueue('a'), /\.slow\./);
    } finally {
      await probe.close();
    }
    const restartedAt = Date.now();
    await redis.restart(1_000);

    assert.equal(await run.exited, 0, run.stderr());
    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    assert.equal(report.results.length, 2);
    assert.ok(report.results.every((r) => r.ok && r.worker.pid === worker.pid));
    assert.deepEqual(report.unfinishedJobs, []);
    assert.ok(
      Date.parse(report.results.find((r) => r.target === 'slow')!.finishedAt) > restartedAt,
      'the job in flight finished after the restart',
    );

    // The coordinator finished the flow too and stored the same report.
    const fleet = openFleet({ redis: { url: redis.url }, prefix, log });
    try {
      // Its parent job is removed once the coordinator has processed it (the report holds the run).
      for (let i = 0; i < 100 && (await fleet.runs.getJob('restarted-run')) !== undefined; i++) await sleep(100);
      assert.equal(await fleet.runs.getJob('restarted-run'), undefined, 'the coordinator processed the run');
      assert.equal((await fleet.store.get('restarted-run'))?.finishedAt, report.finishedAt);
    } finally {
      await fleet.close();
    }
    assert.equal(worker.child.exitCode, null);
    assert.equal(coordinator.child.exitCode, null);
  });
});
