// A Redis Cluster of the test's own (three primaries with a replica each, redis-servers on free
// loopback ports): workers, the coordinator and `run` over redis-cluster://, naming only nodes
// that do not hold the prefix's slot, so every command of theirs is redirected; the primary that
// holds it killed (kill -9) in the middle of a run, its replica taking over; and the URLs of the
// wrong kind refused with one clear message (docs/distributed.md, "Operating it").
import assert from 'node:assert/strict';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { openFleet } from '../../coordinator/fleet.js';
import { createLabCa } from '../../lab/certs.js';
import { startLab, type Lab } from '../../lab/index.js';
import { everyJobOnce, howFleetCommandsEnd, startFailoverRun } from '../helpers/failover-runs.js';
import { writePlan } from '../helpers/plans.js';
import { spawnCli, startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { answers, startOwnRedis, testPrefix, type OwnRedis } from '../helpers/redis.js';
import { needsCluster, requireCluster, startOwnCluster, type OwnCluster } from '../helpers/redis-topologies.js';
import { runCli } from '../helpers/repo.js';

const log = createLogger('test', 'silent');

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
    let redis: { url: string; prefix: string };
    let workers: CliProcess[];
    let coordinator: CliProcess;

    before(async () => {
      const shard = await cluster.shardOf(prefix);
      assert.equal(shard.replicas.length, 1);
      const elsewhere = cluster.nodes.filter((node) => node !== shard.primary && !shard.replicas.includes(node));
      redis = { url: cluster.urlOf(elsewhere.slice(0, 2)), prefix };
      workers = await Promise.all(['a', 'b'].map((region) => startWorkerProcess(region, redis.url, prefix)));
      coordinator = spawnCli([
        'coordinator',
        ...['--redis', redis.url, '--prefix', prefix, '--port', '0', '--sweep-interval-ms', '500'],
      ]);
      processes.push(...workers, coordinator);
      await coordinator.waitFor(/"msg":"coordinator ready"/, 60_000);
    });

    test('a run completes with every job once and its report stored; the coordinator read the persistence of the nodes it knows', async () => {
      const run = await startFailoverRun(lab, redis, 'cluster-routed');
      processes.push(run.run);
      const report = await everyJobOnce(run, redis);
      assert.deepEqual(
        new Set(report.results.map((r) => r.worker.pid)),
        new Set(workers.map((w) => w.pid)),
        "each region's jobs ran on its worker",
      );
      // Every node the client knows was read (the primaries at least; replicas as CLUSTER SLOTS lists them).
      const persistence = /"redis":"([^"]*(?:\\"[^"]*)*)","msg":"Redis persists every write \(append-only file\)"/.exec(
        coordinator.stderr(),
      );
      assert.ok(persistence, coordinator.stderr());
      const nodesRead = persistence[1]!.split('; ');
      assert.ok(nodesRead.length >= 3, persistence[1]);
      for (const node of nodesRead) assert.match(node, /^127\.0\.0\.1:\d+: appendonly yes/);
      assert.doesNotMatch(
        [...workers, coordinator, run.run].map((p) => p.stderr()).join('\n'),
        /MOVED/,
        'redirections are followed, never reported',
      );
    });

    test('a schedule added, listed and removed over the cluster; the coordinator fires it and its run is stored', async () => {
      const planFile = await writePlan(`
name: cluster-every-two
regions: [a]
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 2, modes: [reused] }]
`);
      const args = ['--redis', redis.url, '--prefix', prefix];
      const added = await runCli(['schedule', 'add', planFile, '--every', '2', ...args]);
      assert.equal(added.code, 0, added.stderr);
      const listed = await runCli(['schedule', 'list', '--json', ...args]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(
        (JSON.parse(listed.stdout) as { name: string }[]).map((schedule) => schedule.name),
        ['cluster-every-two'],
      );
      const fleet = openFleet({ redis: { url: redis.url }, prefix, log });
      try {
        let fired = 0;
        for (let i = 0; i < 300 && fired === 0; i++) {
          fired = (await fleet.store.list(10)).filter((run) => run.plan === 'cluster-every-two').length;
          if (fired === 0) await sleep(100);
        }
        assert.ok(fired > 0, 'a run of the schedule is stored');
      } finally {
        await fleet.close();
      }
      const removed = await runCli(['schedule', 'remove', 'cluster-every-two', ...args]);
      assert.equal(removed.code, 0, removed.stderr);
    });

    test('kill -9 of the primary holding the prefix in the middle of a run: its replica takes over and the run completes, every job once', async () => {
      const shard = await cluster.shardOf(prefix);
      const run = await startFailoverRun(lab, redis, 'cluster-failover');
      processes.push(run.run);
      const killedAt = Date.now();
      await shard.primary.kill();
      await cluster.failedOver(shard.replicas[0]!);
      assert.equal((await cluster.shardOf(prefix)).primary, shard.replicas[0], 'the replica holds the prefix now');
      await everyJobOnce(run, redis, killedAt, [...workers, coordinator]);
      for (const p of [...workers, coordinator]) assert.equal(p.child.exitCode, null, `still running:\n${p.stderr()}`);
    });
  });

  test('a single-server URL to a node of the cluster: worker, coordinator, run and runs end with one message naming redis-cluster:// (exit 2), before any MOVED', async () => {
    const prefix = testPrefix();
    const shard = await cluster.shardOf(prefix);
    const others = cluster.nodes.filter((n) => n !== shard.primary && !shard.replicas.includes(n));
    const node = (await Promise.all(others.map(async (n) => ((await answers(n.url)) ? n : undefined)))).find(Boolean)!;
    const redis = ['--redis', `redis://127.0.0.1:${node.port}`, '--prefix', prefix];
    const planFile = await writePlan(
      'name: wrong-kind\nregions: [a]\ntargets: [{ name: t, url: "http://127.0.0.1:1" }]\nexperiments: [{ probe: reuse, requests: 1, modes: [reused] }]\n',
    );
    const endings = await howFleetCommandsEnd(redis, planFile, processes);
    for (const [what, ended] of endings) {
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
    assert.doesNotMatch(endings[0]![1].stderr, /MOVED/, 'the worker asked for no job');
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

describe('Redis Cluster over TLS (rediss-cluster://, a private CA): three primaries', needsCluster, () => {
  let cluster: OwnCluster;
  let lab: Lab;
  let caFile: string;
  const processes: CliProcess[] = [];

  before(async () => {
    requireCluster();
    const ca = await createLabCa();
    cluster = await startOwnCluster({
      primaries: 3,
      replicasEach: 0,
      tls: {
        caPem: ca.certPem,
        server: await ca.issue({ hosts: ['127.0.0.1'] }),
        client: await ca.issue({ hosts: ['redis-node'], usage: 'client' }),
      },
    });
    caFile = path.join(cluster.nodes[0]!.dir, 'ca.pem');
    lab = await startLab({ log });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await lab?.close();
    await cluster?.stop();
  });

  test('a worker and run over rediss-cluster:// with --redis-ca: the run completes and its report is stored', async () => {
    const prefix = testPrefix();
    const shard = await cluster.shardOf(prefix);
    const url = cluster.urlOf(cluster.nodes.filter((node) => node !== shard.primary));
    const redis = ['--redis', url, '--redis-ca', caFile, '--prefix', prefix];
    const worker = await startWorkerProcess('a', url, prefix, ['--redis-ca', caFile]);
    processes.push(worker);
    const planFile = await writePlan(`
name: over-tls-cluster
regions: [a]
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 3, modes: [reused, new] }]
`);
    const run = await runCli(['run', planFile, ...redis, '--run-id', 'tls-cluster-run']);
    assert.equal(run.code, 0, run.stderr);
    const shown = await runCli(['runs', 'show', 'tls-cluster-run', '--json', ...redis]);
    assert.equal(shown.code, 0, shown.stderr);
    const report = JSON.parse(shown.stdout) as RunReport;
    assert.equal(report.results.length, 2);
    assert.ok(report.results.every((r) => r.ok && r.worker.pid === worker.pid));
    // Without the CA the certificate is not trusted: nothing connects.
    const untrusted = await runCli(['runs', 'list', '--redis', url, '--prefix', prefix, '--redis-timeout', '1']);
    assert.equal(untrusted.code, 4, untrusted.stderr);
  });
});
