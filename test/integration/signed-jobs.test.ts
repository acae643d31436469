// Signed jobs on a real Redis: a worker started with PROBEFLEET_JOB_KEY runs the jobs the
// coordinator side signed with the same key, fails unsigned and altered ones at once with the
// reason (never retried), and keeps running. The coordinator checks a schedule's signature the same way.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { Job } from 'bullmq';
import { JOB_NAMES } from '../../contracts/queues.js';
import { PROBE_BATCH_SCHEMA, type JobPayload } from '../../contracts/job.js';
import { signData } from '../../common/job-signature.js';
import { createLogger } from '../../common/log.js';
import { startCoordinator } from '../../coordinator/coordinator-service.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { addSchedule, removeSchedule } from '../../coordinator/schedules.js';
import { startLab, type Lab } from '../../lab/index.js';
import type { BatchDone } from '../../worker/queue-worker.js';
import { jobsOf } from '../helpers/plans.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';

const log = createLogger('test', 'silent');
const KEY = 'test-job-key-0123456789abcdef-0123456789';

function planYaml(lab: Lab, name: string): string {
  return `
name: ${name}
regions: [a]
jobTimeoutSeconds: 30
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 2, modes: [reused] }]
`;
}

async function settled(job: Job): Promise<string> {
  let state = '';
  for (let i = 0; i < 200 && state !== 'failed' && state !== 'completed'; i++) {
    await sleep(50);
    state = await job.getState();
  }
  return state;
}

describe('signed jobs', needsRedis, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let fleet: Fleet;
  let worker: CliProcess;

  before(async () => {
    requireRedis();
    lab = await startLab({ log });
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log, jobKey: KEY });
    worker = await startWorkerProcess('a', TEST_REDIS_URL, prefix, [], { PROBEFLEET_JOB_KEY: KEY });
  });
  after(async () => {
    await worker?.stop();
    await fleet?.close();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('a worker with the key runs signed jobs; unsigned and altered ones fail at once with the reason', async () => {
    assert.match(worker.stderr(), /only jobs signed with it run/);
    const queue = fleet.regionQueue('a');
    const [payload] = await jobsOf(planYaml(lab, 'direct'));
    const attempt = { attempts: 3 };

    const batchOf = (jobId: string) => ({
      schema: PROBE_BATCH_SCHEMA,
      runId: payload!.runId,
      deadline: new Date(Date.now() + 60_000).toISOString(),
      jobs: [{ ...payload, jobId }],
    });

    const unsigned = await queue.add(JOB_NAMES.probe, batchOf('unsigned-1'), { jobId: 'unsigned-1', ...attempt });
    const signed = signData(batchOf('altered-1'), KEY);
    // Aimed elsewhere after signing: the tls server's port instead of the keep-alive one.
    const [job] = signed.jobs as JobPayload[];
    const altered = await queue.add(
      JOB_NAMES.probe,
      { ...signed, jobs: [{ ...job, target: { ...job.target, url: lab.url('https') } }] },
      { jobId: 'altered-1', ...attempt },
    );
    const otherKey = await queue.add(JOB_NAMES.probe, signData(batchOf('other-key-1'), `${KEY}-other`), {
      jobId: 'other-key-1',
      ...attempt,
    });
    const good = await queue.add(JOB_NAMES.probe, signData(batchOf('signed-1'), KEY), {
      jobId: 'signed-1',
      ...attempt,
    });

    for (const [job, reason] of [
      [unsigned, /^unsigned: PROBEFLEET_JOB_KEY is set here, and only jobs signed with it are accepted$/],
      [altered, /^bad signature: the job was altered after it was signed/],
      [otherKey, /^bad signature: /],
    ] as const) {
      assert.equal(await settled(job), 'failed', job.id);
      const failed = (await queue.getJob(job.id!))!;
      assert.equal(failed.attemptsMade, 1, `${job.id}: not retried`);
      assert.match(failed.failedReason, reason);
    }
    assert.equal(lab.servers.https.connectionsAccepted(), 0, 'the altered target was never reached');
    assert.equal(await settled(good), 'completed');
    // A batch of one returns its result (worker/run-results.ts).
    const [result] = ((await queue.getJob('signed-1'))!.returnvalue as BatchDone).results;
    assert.equal(result?.jobId, 'signed-1');
    assert.equal(result?.ok, true);
    assert.equal(worker.child.exitCode, null, 'the worker is still running');

    // The coordinator side signs what it submits (the queue paused: the worker would take the
    // job, and remove it once done, before the test could read it).
    await queue.pause();
    const run = await submitRun(fleet, await parsePlan(planYaml(lab, 'signed-run'), 'inline.yaml'), 'signed-run-1');
    const child = (await queue.getJob(run.jobs[0].jobId))!;
    await queue.resume();
    assert.match((child.data as { signature: string }).signature, /^hmac-sha256:[0-9a-f]{64}$/);
    const report = await waitForRun(fleet, run.data, { log, progress: { update() {}, done() {} }, pollMs: 100 });
    assert.equal(report?.results[0]?.ok, true, 'the signed job ran');
  });

  test('a schedule added with the key fires into signed jobs; one added without it is refused when it fires', async () => {
    const coordinator = await startCoordinator({
      fleet,
      log,
      listen: { host: '127.0.0.1', port: 0 },
      sweepIntervalMs: 500,
    });
    const unkeyed = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    try {
      await addSchedule(fleet, await parsePlan(planYaml(lab, 'signed-schedule'), 'inline.yaml'), { everyMs: 1000 });
      await addSchedule(unkeyed, await parsePlan(planYaml(lab, 'unsigned-schedule'), 'inline.yaml'), { everyMs: 1000 });
      let stored = await fleet.store.list(20);
      let refused: Job | undefined;
      for (let i = 0; i < 200 && !(refused && stored.some((r) => r.runId.startsWith('signed-schedule-'))); i++) {
        await sleep(100);
        stored = await fleet.store.list(20);
        refused = (await fleet.runs.getFailed()).find((job) => job.repeatJobKey === 'unsigned-schedule');
      }
      const run = stored.find((r) => r.runId.startsWith('signed-schedule-'));
      assert.ok(run, 'the signed schedule made a stored run');
      assert.ok((await fleet.store.get(run.runId))!.results.every((r) => r.ok));
      assert.match(
        refused?.failedReason ?? '',
        /^schedule unsigned-schedule: unsigned: PROBEFLEET_JOB_KEY is set here/,
      );
    } finally {
      await removeSchedule(fleet, 'signed-schedule');
      await removeSchedule(fleet, 'unsigned-schedule');
      await unkeyed.close();
      await coordinator.close();
    }
  });

  test('a key too short to trust is refused at start (exit 2)', async () => {
    const { code, stderr } = await runCli(['worker', '--region', 'a', '--redis', TEST_REDIS_URL, '--prefix', prefix], {
      env: { PROBEFLEET_JOB_KEY: 'short' },
    });
    assert.equal(code, 2);
    assert.match(stderr, /PROBEFLEET_JOB_KEY must be at least 32 characters/);
  });
});
