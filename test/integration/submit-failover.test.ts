// A failover during or right after a submit, with a primary, a replica and socat proxies of the
// test's own (test/helpers/held-replication.ts): the CLI connects through the front proxy, the test holds
// the replication stream so that writes the primary acknowledged never reach the replica, then kills
// the primary, promotes the replica and points the proxy at it after a 1 s gap. What the failover
// lost shows as lost, never as done, and the `run` waiting for it adds it again; a submit whose
// writes the replica confirmed (WAIT) loses nothing (docs/distributed.md, "What happens on each fault").
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { RUNS_QUEUE } from '../../contracts/queues.js';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { redisOptions } from '../../common/redis.js';
import { startLab, type Lab } from '../../lab/index.js';
import { exitWithin } from '../helpers/failover-runs.js';
import { startReplicatedRedis, type ReplicatedRedis } from '../helpers/held-replication.js';
import { jobsOf, writePlan } from '../helpers/plans.js';
import { spawnCli, startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { needsRedis, requireRedis, testPrefix } from '../helpers/redis.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');
const GAP_MS = 1_000;
/** `run`'s --redis-timeout here: its wait for the replica (WAIT) is 80 % of it. */
const REDIS_TIMEOUT_SECONDS = 3;

/** `targets` × `experiments` × 2 modes jobs of one request each, in region `region`. */
function planYaml(lab: Lab, name: string, region: string, targets: number, experiments: number): string {
  return [
    `name: ${name}`,
    `regions: [${region}]`,
    'jobTimeoutSeconds: 10',
    'targets:',
    ...Array.from({ length: targets }, (_, i) => `  - { name: t${i}, url: "${lab.url('keepalive')}" }`),
    'experiments:',
    ...Array.from(
      { length: experiments },
      (_, i) => `  - { probe: reuse, requests: 1, modes: [reused, new], timeoutMs: ${5_000 + i} }`,
    ),
    '',
  ].join('\n');
}

async function readReport(file: string): Promise<RunReport> {
  return runReportSchema.parse(JSON.parse(await readFile(file, 'utf8'))) as RunReport;
}

describe('a failover during a submit', needsRedis, () => {
  let lab: Lab;
  const rigs: ReplicatedRedis[] = [];
  const processes: CliProcess[] = [];

  before(async () => {
    requireRedis(); // redis-server comes with the same package
    lab = await startLab({ log });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await Promise.all(rigs.map((rig) => rig.stop()));
    await lab?.close();
  });

  /** Starts `run` on a fresh rig; resolves with it, the rig and where its JSON report goes. */
  async function startRun(plan: string, runId: string, rig: ReplicatedRedis, prefix: string) {
    const json = path.join(tempDir('probefleet-failover-'), 'run.json');
    const run = spawnCli([
      'run',
      plan,
      '--redis',
      rig.url,
      '--prefix',
      prefix,
      '--run-id',
      runId,
      '--deadline',
      '90',
      '--redis-timeout',
      String(REDIS_TIMEOUT_SECONDS),
      '--json',
      json,
    ]);
    processes.push(run);
    return { run, json };
  }

  /** After the failover: a worker of the region, on the new primary; the run's exit and report. */
  async function finish(run: CliProcess, json: string, rig: ReplicatedRedis, prefix: string, region: string) {
    processes.push(await startWorkerProcess(region, rig.url, prefix));
    assert.equal(await exitWithin(run, 150_000), 0, run.stderr());
    return readReport(json);
  }

  /** Every job has one result; on failure, what `run` printed says how it got there. */
  function everyJobOnce(report: RunReport, expected: string[], run: CliProcess): void {
    assert.deepEqual(report.unfinishedJobs, [], run.stderr());
    assert.deepEqual(
      report.results.map((r) => r.jobId).sort(),
      [...expected].sort(),
      `every job exactly once:\n${run.stderr()}`,
    );
  }

  test('replication held through the submit: the failover loses the whole run, and the waiting run adds it all again', async () => {
    const rig = await startReplicatedRedis();
    rigs.push(rig);
    const prefix = testPrefix();
    const yaml = planYaml(lab, 'failover-all', 'fa', 3, 1);
    const { run, json } = await startRun(await writePlan(yaml), 'fo-all', rig, prefix);
    rig.holdReplication();
    await run.waitFor(/^run fo-all submitted to /m, 60_000);
    // The replica never confirmed the writes (WAIT), and `run` says what that means, in a line
    // written after the one above (so waited for, not read at once).
    await run.waitFor(
      /^run fo-all: Redis's replicas did not confirm its jobs in time \(0 of 1 within 2\.4 s\): a failover now could lose some; this command adds them again if it does$/m,
      10_000,
    );
    await rig.failover(GAP_MS);
    const report = await finish(run, json, rig, prefix, 'fa');
    everyJobOnce(
      report,
      (await jobsOf(yaml, 'fo-all')).map((j) => j.jobId),
      run,
    );
    assert.match(run.stderr(), /^run fo-all: its parent job is no longer in Redis; adding it again \(1 of 3\)$/m);
    assert.match(run.stderr(), /^run fo-all: added 6 of 6 batches again$/m);
  });

  test('replication held once the replica has the parent: the batches it missed show as lost, not done, and are added again', async () => {
    const rig = await startReplicatedRedis();
    rigs.push(rig);
    const prefix = testPrefix();
    // 400 jobs, one BullMQ job each: adding them takes long enough to hold replication part way.
    const yaml = planYaml(lab, 'failover-part', 'fb', 20, 10);
    const { run, json } = await startRun(await writePlan(yaml), 'fo-part', rig, prefix);
    const parentKey = `${prefix}:${RUNS_QUEUE}:fo-part`;
    const until = Date.now() + 60_000;
    for (let i = 0; i < 1_000_000 && (await rig.replicaClient.exists(parentKey)) === 0; i++)
      if (Date.now() > until) assert.fail(`the replica never had the parent:\n${run.stderr()}`);
    rig.holdReplication();
    await run.waitFor(/^run fo-part submitted to /m, 60_000);
    await rig.failover(GAP_MS);
    const report = await finish(run, json, rig, prefix, 'fb');
    everyJobOnce(
      report,
      (await jobsOf(yaml, 'fo-part')).map((j) => j.jobId),
      run,
    );
    // Progress counted the jobs Redis held: the ones lost showed as lost, and were added again.
    assert.match(run.stderr(), /^jobs done per region: fb \d+\/400 \(\d+ lost\)$/m);
    assert.match(
      run.stderr(),
      /^run fo-part: \d+ of its jobs are not in Redis \(lost: a failover, or a restart without persistence\); adding it again \(1 of 3\)$/m,
    );
    assert.doesNotMatch(run.stderr(), /^jobs done per region: fb 400\/400 \(\d+ lost\)$/m, 'lost jobs are never done');
  });

  test('a failover in the middle of a submit: its writes cut off, the submit finds what the new primary holds and adds the rest', async () => {
    const rig = await startReplicatedRedis();
    rigs.push(rig);
    const prefix = testPrefix();
    const yaml = planYaml(lab, 'failover-mid', 'fd', 20, 10);
    const { run, json } = await startRun(await writePlan(yaml), 'fo-mid', rig, prefix);
    // The primary is killed as soon as it has the parent: the batches' writes in flight are cut off.
    const primary = new Redis(redisOptions({ url: rig.primary.url }));
    try {
      const until = Date.now() + 60_000;
      for (let i = 0; i < 1_000_000 && (await primary.exists(`${prefix}:${RUNS_QUEUE}:fo-mid`)) === 0; i++)
        if (Date.now() > until) assert.fail(`the primary never had the parent:\n${run.stderr()}`);
    } finally {
      primary.disconnect();
    }
    await rig.failover(GAP_MS);
    await run.waitFor(/^run fo-mid submitted to /m, 60_000);
    const report = await finish(run, json, rig, prefix, 'fd');
    everyJobOnce(
      report,
      (await jobsOf(yaml, 'fo-mid')).map((j) => j.jobId),
      run,
    );
    // Named before anything was written: had the submit failed, its id would have been on the screen.
    assert.match(
      run.stderr().split('\n')[0]!,
      /^run fo-mid: submitting to redis:\/\/127\.0\.0\.1:\d+ \(prefix \{pftest-\w+\}\)$/,
      run.stderr(),
    );
  });

  test('a failover right after a submit that its replica confirmed loses nothing', async () => {
    const rig = await startReplicatedRedis();
    rigs.push(rig);
    const prefix = testPrefix();
    const yaml = planYaml(lab, 'failover-confirmed', 'fc', 3, 1);
    const { run, json } = await startRun(await writePlan(yaml), 'fo-confirmed', rig, prefix);
    await run.waitFor(/^run fo-confirmed submitted to /m, 60_000);
    await rig.failover(GAP_MS);
    const report = await finish(run, json, rig, prefix, 'fc');
    everyJobOnce(
      report,
      (await jobsOf(yaml, 'fo-confirmed')).map((j) => j.jobId),
      run,
    );
    assert.doesNotMatch(run.stderr(), /did not confirm|adding it again|lost/);
  });
});
