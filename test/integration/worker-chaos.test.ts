// kill -9 chaos: workers of a region killed one after another, each while it holds a batch, and
// replaced, while a run of 120 jobs in batches of 10 goes on (each job 2-7 reused requests to the
// Nagle endpoint, ~40 ms each: a batch lasts seconds, so kills land mid-batch). Every job ends up
// in the report once, and a result says its worker was lost only for the job that worker was
// running: at most one per kill, not every job of a batch taken over.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { startLab, type Lab } from '../../lab/index.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';

const log = createLogger('test', 'silent');
const FAST_STALL = ['--stall-timeout-seconds', '4'];
const WORKERS = 3;
const KILLS = 6;
const TARGETS = 20;
const EXPERIMENTS = 6;
const JOBS_PER_BATCH = 10;

describe('kill -9 chaos', needsRedis, () => {
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

  test(`${KILLS} workers killed mid-batch in a run of ${TARGETS * EXPERIMENTS} jobs: every job once, and at most one result per kill says its worker was lost`, async () => {
    const start = () => startWorkerProcess('a', TEST_REDIS_URL, prefix, FAST_STALL);
    const live = await Promise.all(Array.from({ length: WORKERS }, start));
    processes.push(...live);
    const plan = `
name: chaos
regions: [a]
jobTimeoutSeconds: 30
targets:
${Array.from({ length: TARGETS }, (_, i) => `  - { name: t${i}, url: "${lab.url('keepalive', `/nagle?t=${i}`)}" }`).join('\n')}
experiments:
${Array.from({ length: EXPERIMENTS }, (_, i) => `  - { probe: reuse, requests: ${i + 2}, modes: [reused] }`).join('\n')}
`;
    const run = await submitRun(fleet, await parsePlan(plan, 'inline.yaml'), 'chaos-run', {
      jobsPerBatch: JOBS_PER_BATCH,
      deadlineSeconds: 600,
    });
    assert.equal(run.jobs.length, TARGETS * EXPERIMENTS);

    // Each kill hits a worker while it holds a batch; a new worker takes its place.
    const queue = fleet.regionQueue('a');
    let kills = 0;
    for (let tries = 0; kills < KILLS && tries < 400; tries++) {
      const active = await queue.getActive();
      const holder = live.find((w) => active.some((job) => job.processedBy?.endsWith(`-${w.pid}`)));
      if (!holder) {
        if ((await fleet.runs.getJobState(run.runId)) !== 'waiting-children') break; // all done
        await sleep(50);
        continue;
      }
      holder.child.kill('SIGKILL');
      await holder.stop();
      kills++;
      const next = await start();
      processes.push(next);
      live.splice(live.indexOf(holder), 1, next);
      await sleep(300);
    }
    assert.ok(kills >= KILLS / 2, `only ${kills} kills landed while the run went on`);

    const report = await waitForRun(fleet, run.data, { log, progress: { update() {}, done() {} }, pollMs: 200 });
    assert.ok(report);
    const ids = [...report.results.map((r) => r.jobId), ...report.unfinishedJobs.map((j) => j.jobId)];
    assert.deepEqual(ids.sort(), run.jobs.map((j) => j.jobId).sort(), 'every job in the report, once');
    // A batch may be lost twice (both its workers killed): it fails, never runs a third time.
    for (const job of report.unfinishedJobs) assert.equal(job.workersLost, 2, `${job.jobId}: ${job.reason}`);
    const labelled = report.results.filter((r) => r.workersLost !== undefined);
    assert.ok(
      labelled.length <= kills,
      `${labelled.length} results say their worker was lost, after ${kills} kills: ${labelled.map((r) => r.jobId).join(', ')}`,
    );
  });
});
