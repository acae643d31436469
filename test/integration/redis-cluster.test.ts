// A Redis Cluster of the test's own (three primaries with a replica each, redis-servers on free
// loopback ports): workers, the coordinator and `run` over redis-cluster://, naming only nodes
// that do not hold the prefix's slot, so every command of theirs is redirected; the primary that
// holds it killed (kill -9) in the middle of a run, its replica taking over; and the URLs of the
// wrong kind refused with one clear message (docs/distributed.md, "Operating it").
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { openFleet } from '../../coordinator/fleet.js';
import { startLab, type Lab } from '../../lab/index.js';
import { writePlan } from '../helpers/plans.js';
import { spawnCli, startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { answers, startOwnRedis, testPrefix, type OwnRedis } from '../helpers/redis.js';
import { needsCluster, requireCluster, startOwnCluster, type OwnCluster } from '../helpers/redis-topologies.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');
/** How long a run of the plan below may take on a busy machine, a failover included. */
const RUN_BOUND_MS = 180_000;

/** Two jobs per region: a slow one (reused requests to the Nagle endpoint wait ~40 ms each), then a quick one. */
function plan(lab: Lab, name: string): string {
  return `
name: ${name}
regions: [a, b]
jobTimeoutSeconds: 60
targets:
  - { name: slow, url: "${lab.url('keepalive', '/nagle')}" }
  - { name: quick, url: "${lab.url('keepalive')}" }
experiments:
  - { probe: reuse, targets: [slow], requests: 100, modes: [reused] }
  - { probe: reuse, targets: [quick], requests: 5, modes: [new] }
`;
}

/** The exit code of a process, or a failure with its log when it runs longer than `ms`. */
async function exitWithin(process: CliProcess, ms: number): Promise<number | null> {
  const code = await Promise.race([process.exited, sleep(ms, 'running' as const)]);
  if (code === 'running') assert.fail(`still running after ${ms} ms:\n${process.stderr()}`);
  return code;
}

/** The report `run --json` wrote: every job of the plan (two per region) exactly once, each ok. */
async function everyJobOnce(file: string): Promise<RunReport> {
  const report = runReportSchema.parse(JSON.parse(await readFile(file, 'utf8'))) as RunReport;
  assert.deepEqual(report.unfinishedJobs, []);
  const ids = report.results.map((r) => r.jobId);
  assert.equal(ids.length, 4, `four results: ${ids.join(', ')}`);
  assert.equal(new Set(ids).size, 4, 'no job twice');
  assert.deepEqual(report.results.map((r) => `${r.region}/${r.target}`).sort(), [
    'a/quick',
    'a/slow',
    'b/quick',
    'b/slow',
  ]);
  assert.ok(
    report.results.every((r) => r.ok),
    'every job ok',
  );
  return report;
}

describe('Redis Cluster: three primaries with a replica each', needsCluster, () => {
  let cluster: OwnCluster;
  let lab: Lab;
  const processes: CliProcess[] = [];

  before(async () => {
    requireCluster();
    cluster = await startOwnCluster({ primaries: 3, replicasEach: 1 });
    lab = await startLab({ log });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await lab?.close();
    await cluster?.stop();
  });

  describe('a fleet over redis-cluster:// naming only nodes that do not hold its prefix', () => {
    const prefix = testPrefix();
    let url: string;
    let workers: CliProcess[];
    let coordinator: CliProcess;

    before(async () => {
      const shard = await cluster.shardOf(prefix);
      assert.equal(shard.replicas.length, 1);
      const elsewhere = cluster.nodes.filter((node) => node !== shard.primary && !shard.replicas.includes(node));
      url = cluster.urlOf(elsewhere.slice(0, 2));
      workers = await Promise.all(['a', 'b'].map((region) => startWorkerProcess(region, url, prefix)));
      coordinator = spawnCli([
        'coordinator',
        '--redis',
        url,
        '--prefix',
        prefix,
        '--port',
        '0',
        '--sweep-interval-ms',
        '500',
      ]);
      processes.push(...workers, coordinator);
      await coordinator.waitFor(/"msg":"coordinator ready"/, 60_000);
    });

    /** `run` of the plan through the fleet, with its report written to a file. */
    function startRun(runId: string, planFile: string, json: string): CliProcess {
      const run = spawnCli(['run', planFile, '--redis', url, '--prefix', prefix, '--run-id', runId, '--json', json]);
      processes.push(run);
      return run;
    }

    /** The coordinator processed the run too (its parent job gone) and stored the same report. */
    async function storedByCoordinator(runId: string, report: RunReport): Promise<void> {
      const fleet = openFleet({ redis: { url }, prefix, log });
      try {
        for (let i = 0; i < 200 && (await fleet.runs.getJob(runId)) !== undefined; i++) await sleep(100);
        assert.equal(await fleet.runs.getJob(runId), undefined, 'the coordinator processed the run');
      } finally {
        await fleet.close();
      }
      const shown = await runCli(['runs', 'show', runId, '--json', '--redis', url, '--prefix', prefix]);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal((JSON.parse(shown.stdout) as RunReport).finishedAt, report.finishedAt);
    }

    test('a run completes with every job once and its report stored; the coordinator read every node for persistence', async () => {
      const json = path.join(tempDir('probefleet-cluster-'), 'run.json');
      const run = startRun('cluster-run', await writePlan(plan(lab, 'over-cluster')), json);
      assert.equal(await exitWithin(run, RUN_BOUND_MS), 0, run.stderr());
      const report = await everyJobOnce(json);
      assert.deepEqual(
        new Set(report.results.map((r) => r.worker.pid)),
        new Set(workers.map((w) => w.pid)),
        "each region's jobs ran on its worker",
      );
      await storedByCoordinator('cluster-run', report);
      // Every node of the cluster, replicas too (one becomes a primary at a failover), each with its AOF.
      assert.match(coordinator.stderr(), /"msg":"Redis persists every write \(append-only file\)"/);
      for (const node of cluster.nodes)
        assert.match(coordinator.stderr(), new RegExp(`127\\.0\\.0\\.1:${node.port}: appendonly yes`));
      assert.doesNotMatch(
        [...workers, coordinator, run].map((p) => p.stderr()).join('\n'),
        /"level":[45]0.*MOVED/,
        'redirections are followed, never reported',
      );
    });

    test('kill -9 of the primary holding the prefix in the middle of a run: its replica takes over and the run completes, every job once', async () => {
      const shard = await cluster.shardOf(prefix);
      const json = path.join(tempDir('probefleet-cluster-'), 'run.json');
      const run = startRun('cluster-failover-run', await writePlan(plan(lab, 'cluster-failover')), json);
      const fleet = openFleet({ redis: { url }, prefix, log });
      try {
        let active = 0;
        for (let i = 0; i < 600 && active === 0; i++) {
          active = (await fleet.regionQueue('a').getActive()).filter((job) => job.id?.includes('.slow.')).length;
          if (active === 0) await sleep(50);
        }
        assert.equal(active, 1, "region a's slow job is running");
      } finally {
        await fleet.close();
      }
      const killedAt = Date.now();
      await shard.primary.kill();
      await cluster.failedOver(shard.replicas[0]!);
      assert.equal((await cluster.shardOf(prefix)).primary, shard.replicas[0], 'the replica holds the prefix now');

      assert.equal(await exitWithin(run, RUN_BOUND_MS), 0, run.stderr());
      const report = await everyJobOnce(json);
      assert.ok(
        Date.parse(report.results.find((r) => r.region === 'a' && r.target === 'slow')!.finishedAt) > killedAt,
        'the job in flight finished after the kill',
      );
      await storedByCoordinator('cluster-failover-run', report);
      for (const p of [...workers, coordinator]) assert.equal(p.child.exitCode, null, `still running:\n${p.stderr()}`);
    });
  });

  test('a single-server URL to a node of the cluster: worker, coordinator, run and runs end with one message naming redis-cluster:// (exit 2), before any MOVED', async () => {
    const prefix = testPrefix();
    const shard = await cluster.shardOf(prefix);
    const others = cluster.nodes.filter((n) => n !== shard.primary && !shard.replicas.includes(n));
    const node = (await Promise.all(others.map(async (n) => ((await answers(n.url)) ? n : undefined)))).find(Boolean)!;
    const redis = ['--redis', `redis://127.0.0.1:${node.port}`, '--prefix', prefix];
    const planFile = await writePlan(plan(lab, 'wrong-kind'));
    const worker = spawnCli(['worker', '--region', 'a', ...redis, '--allow-loopback']);
    const coordinator = spawnCli(['coordinator', ...redis, '--port', '0']);
    processes.push(worker, coordinator);
    for (const [what, ended] of [
      ['worker', { code: await exitWithin(worker, 60_000), stderr: worker.stderr() }],
      ['coordinator', { code: await exitWithin(coordinator, 60_000), stderr: coordinator.stderr() }],
      ['run', await runCli(['run', planFile, ...redis])],
      ['runs list', await runCli(['runs', 'list', ...redis])],
    ] as const) {
      assert.equal(ended.code, 2, `${what}: exit 2\n${ended.stderr}`);
      assert.match(
        ended.stderr,
        new RegExp(
          `^the Redis at redis://127\\.0\\.0\\.1:${node.port} is a node of a Redis Cluster: use redis-cluster://127\\.0\\.0\\.1:${node.port}`,
          'm',
        ),
        what,
      );
    }
    assert.doesNotMatch(worker.stderr(), /MOVED/, 'the worker asked for no job');
  });

  test('redis-cluster:// to a Redis that is not a cluster: runs ends within --redis-timeout and says why (exit 4)', async () => {
    let plain: OwnRedis | undefined;
    try {
      plain = await startOwnRedis({ persistence: 'none' });
      const ended = await runCli([
        'runs',
        'list',
        '--redis',
        `redis-cluster://127.0.0.1:${plain.port}`,
        '--redis-timeout',
        '1',
      ]);
      assert.equal(ended.code, 4, ended.stderr);
      assert.match(ended.stderr, /cluster support disabled/);
    } finally {
      await plain?.stop();
    }
  });
});
