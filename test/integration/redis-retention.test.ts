// What a fleet keeps in Redis, on a redis-server of the test's own: a soak of 8,000 tiny jobs
// (eight runs of 1,000, real worker processes, a coordinator) under report retention of 2 runs.
// Each result is stored once (no job is left once its run is reported), and Redis memory stops
// growing with the runs. It also measures what 1,000 queued jobs and a report of 1,000 results
// cost, the figures docs/distributed.md quotes.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_RETENTION, type RetentionSettings } from '../../contracts/retention.js';
import { reportKeys } from '../../contracts/queues.js';
import { createLogger } from '../../common/log.js';
import { startCoordinator, type RunningCoordinator } from '../../coordinator/coordinator-service.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { startLab, type Lab } from '../../lab/index.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { needsRedis, requireRedis, startOwnRedis, testPrefix, type OwnRedis } from '../helpers/redis.js';

const log = createLogger('test', 'silent');
const RUNS = 8;
const TARGETS = 100;
const EXPERIMENTS = 10;
const JOBS_PER_RUN = TARGETS * EXPERIMENTS;
const RETENTION: RetentionSettings = { ...DEFAULT_RETENTION, reports: { ...DEFAULT_RETENTION.reports, maxCount: 2 } };

/** 1,000 jobs of one request each: 100 targets (one lab server) x 10 experiments that differ only
 * in their request time bound, so that their job ids differ. */
function soakPlan(lab: Lab, region: string): string {
  const targets = Array.from({ length: TARGETS }, (_, i) => `  - { name: t${i}, url: "${lab.url('keepalive')}" }`);
  const experiments = Array.from(
    { length: EXPERIMENTS },
    (_, i) => `  - { probe: reuse, requests: 1, modes: [reused], timeoutMs: ${10_000 + i} }`,
  );
  return `name: soak\nregions: [${region}]\njobTimeoutSeconds: 30\ntargets:\n${targets.join('\n')}\nexperiments:\n${experiments.join('\n')}\n`;
}

const MiB = 1024 * 1024;

describe('retention: Redis memory bounded over 8,000 jobs', needsRedis, () => {
  let redis: OwnRedis;
  let lab: Lab;
  let fleet: Fleet;
  let coordinator: RunningCoordinator;
  const workers: CliProcess[] = [];
  const prefix = testPrefix();

  before(async () => {
    requireRedis(); // redis-server comes with the same package
    redis = await startOwnRedis({ persistence: 'none' });
    lab = await startLab({ log });
    fleet = openFleet({ redis: { url: redis.url }, prefix, log, retention: RETENTION });
    coordinator = await startCoordinator({ fleet, log, listen: { host: '127.0.0.1', port: 0 } });
    workers.push(
      ...(await Promise.all([1, 2].map(() => startWorkerProcess('a', redis.url, prefix, ['--concurrency', '4'])))),
    );
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await coordinator?.close();
    await fleet?.close();
    await lab?.close();
    await redis?.stop();
  });

  const keys = () => fleet.client.keys(`${prefix}*`);
  /** What Redis holds for the fleet's keys, as it counts each (MEMORY USAGE). Not used_memory,
   * which moved by 2.5 MiB from run to run with the same keys of the same sizes (client buffers,
   * memory freed later). */
  const usedMemory = async () => {
    let bytes = 0;
    for (const key of await keys()) bytes += Number(await fleet.client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    return bytes;
  };
  /** The keys a run leaves, with run ids as `soak-N`, without those whose being there is a matter of
   * timing: a queue's `stalled-check`, which BullMQ sets for one stall interval each time a worker checks. */
  const keptKeys = async () =>
    (await keys())
      .filter((k) => !k.endsWith(':stalled-check'))
      .map((k) => k.replace(/soak-\d+/, 'soak-N'))
      .sort();
  /** Job hashes (`<prefix>:<queue>:<id>`), as opposed to a queue's own keys (meta, events, id...). */
  const jobHashes = async () =>
    (await keys()).filter(
      (k) => /^[^:]+:(runs|probe\.a):[^:]+$/.test(k) && !/:(meta|events|id|stalled-check|marker)$/.test(k),
    );

  test('each result is stored once, and memory stops growing with the runs', async () => {
    const plan = await parsePlan(soakPlan(lab, 'a'), 'soak.yaml');
    const afterRun: { memory: number; keys: string[]; seconds: number }[] = [];
    for (let i = 1; i <= RUNS; i++) {
      const started = Date.now();
      const run = await submitRun(fleet, plan, `soak-${i}`);
      assert.equal(run.jobs.length, JOBS_PER_RUN);
      const report = await waitForRun(fleet, run.data, {
        log,
        progress: { update() {}, done() {} },
        pollMs: 250,
      });
      assert.equal(report?.results.length, JOBS_PER_RUN, `run ${i}: every job has a result`);
      // The coordinator processes the parent and removes it: then only the report holds the run.
      for (let n = 0; n < 200 && (await fleet.runs.getJob(run.runId)) !== undefined; n++) await sleep(50);
      assert.equal(await fleet.runs.getJob(run.runId), undefined, `run ${i}: its parent job is gone`);
      assert.deepEqual(await jobHashes(), [], `run ${i}: no job is left, the results are in the report`);
      // Then the coordinator compares the run with the one before and stores that (2.5 MiB): measured
      // before it, the run would look 2.5 MiB lighter than the next.
      if (i > 1) {
        for (let n = 0; n < 200 && !(await fleet.store.getComparison(run.runId)); n++) await sleep(50);
        assert.ok(await fleet.store.getComparison(run.runId), `run ${i}: its comparison is stored`);
      }
      afterRun.push({
        memory: await usedMemory(),
        keys: await keptKeys(),
        seconds: (Date.now() - started) / 1000,
      });
    }
    const stored = await fleet.client.zrange(reportKeys.index(prefix), '0', '-1');
    assert.deepEqual(stored.sort(), [`soak-${RUNS - 1}`, `soak-${RUNS}`], 'the two newest reports are kept');
    assert.equal(await fleet.client.exists(reportKeys.report(prefix, 'soak-1')), 0);

    // From the third run on the retention is full (two reports, and the coordinator's comparisons
    // of each with the run before it): the keys are the same from then on, and memory stays put
    // within 10% (10% of ~7.5 MiB is a fifth of what every run kept would add: a report and its
    // comparison, ~3.75 MiB, measured below).
    const full = afterRun[2]!;
    for (const later of afterRun.slice(3)) {
      assert.deepEqual(later.keys, full.keys);
      assert.ok(later.memory <= full.memory * 1.1, JSON.stringify(afterRun.map(({ keys, ...r }) => r)));
    }
    console.log(
      `soak: ${RUNS} runs of ${JOBS_PER_RUN} jobs; after each: ${afterRun
        .map((r) => `${(r.memory / MiB).toFixed(2)} MiB, ${r.keys.length} keys, ${r.seconds.toFixed(1)} s`)
        .join('; ')}`,
    );
  });

  test('what 1,000 jobs cost in Redis: queued (before any worker takes them), and as a stored report', async () => {
    // A region without a worker: the jobs wait, as they do before a run's workers reach them.
    const plan = await parsePlan(soakPlan(lab, 'parked'), 'soak.yaml');
    const before = new Set(await keys());
    const run = await submitRun(fleet, plan, 'parked-run');
    // The keys the run added (its jobs, their queue, the parent and its dependencies), as Redis counts them.
    let queued = 0;
    for (const key of (await keys()).filter((k) => !before.has(k)))
      queued += Number(await fleet.client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    const usage = async (key: string) => Number(await fleet.client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    const reportKey = reportKeys.report(prefix, `soak-${RUNS}`);
    const reportBytes = await usage(reportKey);
    const comparisonBytes = await usage(reportKeys.comparison(prefix, `soak-${RUNS}`));
    const reportJson = (await fleet.client.get(reportKey))!.length;
    console.log(
      `per ${JOBS_PER_RUN} jobs: queued ${(queued / MiB).toFixed(2)} MiB; a stored report of ${JOBS_PER_RUN} results (one request each) ${(reportBytes / MiB).toFixed(2)} MiB (${(reportJson / MiB).toFixed(2)} MiB of JSON); its comparison with the run before ${(comparisonBytes / MiB).toFixed(2)} MiB`,
    );
    assert.ok(queued > 0 && reportBytes > 0 && comparisonBytes > 0);
    await fleet.runs.remove(run.runId, { removeChildren: true });
  });
});
