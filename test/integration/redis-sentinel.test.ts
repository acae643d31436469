// Redis Sentinel of the test's own (a primary, a replica and three redis-sentinels, on free
// loopback ports): workers, the coordinator and `run` over redis-sentinel://, through a kill -9
// of the primary in the middle of a run, then a planned switch (SENTINEL FAILOVER) in the middle
// of the next; and a URL naming a primary the sentinels do not know (docs/distributed.md,
// "Operating it").
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisConnection } from 'bullmq';
import type { Redis } from 'ioredis';
import { createLogger } from '../../common/log.js';
import { createRedisClient, redisOptions } from '../../common/redis.js';
import { startLab, type Lab } from '../../lab/index.js';
import { everyJobOnce, startFailoverRun } from '../helpers/failover-runs.js';
import { spawnCli, startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { testPrefix } from '../helpers/redis.js';
import { needsSentinel, requireSentinel, startOwnSentinels, type OwnSentinels } from '../helpers/redis-topologies.js';
import { runCli } from '../helpers/repo.js';

const log = createLogger('test', 'silent');

describe('Redis Sentinel: a primary, a replica and three sentinels', needsSentinel, () => {
  let sentinels: OwnSentinels;
  let lab: Lab;
  const processes: CliProcess[] = [];

  before(async () => {
    requireSentinel();
    sentinels = await startOwnSentinels({ replicas: 1, sentinels: 3 });
    lab = await startLab({ log });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await lab?.close();
    await sentinels?.stop();
  });

  describe('a fleet over redis-sentinel://', () => {
    let redis: { url: string; prefix: string };
    let workers: CliProcess[];
    let coordinator: CliProcess;

    before(async () => {
      redis = { url: sentinels.url, prefix: testPrefix() };
      workers = await Promise.all(['a', 'b'].map((region) => startWorkerProcess(region, redis.url, redis.prefix)));
      coordinator = spawnCli([
        'coordinator',
        ...['--redis', redis.url, '--prefix', redis.prefix, '--port', '0', '--sweep-interval-ms', '500'],
      ]);
      processes.push(...workers, coordinator);
      await coordinator.waitFor(/"msg":"coordinator ready"/, 60_000);
    });

    test('kill -9 of the primary in the middle of a run: the sentinels promote the replica; workers, the coordinator and run follow, every job once and the report stored', async () => {
      const run = await startFailoverRun(lab, redis, 'sentinel-killed');
      processes.push(run.run);
      const primary = await sentinels.primary();
      assert.equal(primary, sentinels.servers[0]);
      const killedAt = Date.now();
      await primary.kill();
      assert.equal(await sentinels.failedOver(primary), sentinels.servers[1], 'the replica is the primary now');
      await everyJobOnce(run, redis, killedAt, [...workers, coordinator]);
      for (const p of [...workers, coordinator]) assert.equal(p.child.exitCode, null, `still running:\n${p.stderr()}`);
    });

    test('the killed primary back as a replica, then SENTINEL FAILOVER in the middle of a run: connections to the demoted primary move to the new one, every job once', async () => {
      const [old, current] = sentinels.servers;
      await old!.start();
      await sentinels.settled();
      assert.equal(await sentinels.primary(), current);
      const run = await startFailoverRun(lab, redis, 'sentinel-switched');
      processes.push(run.run);
      const switchedAt = Date.now();
      await sentinels.switchOver();
      assert.equal(await sentinels.failedOver(current!), old, 'the first primary is the primary again');
      await everyJobOnce(run, redis, switchedAt, [...workers, coordinator]);
      for (const p of [...workers, coordinator]) assert.equal(p.child.exitCode, null, `still running:\n${p.stderr()}`);
    });
  });

  test('a primary name the sentinels do not know: runs ends within --redis-timeout and says so, the password hidden (exit 4)', async () => {
    const url = `${sentinels.url.replace('redis-sentinel://', 'redis-sentinel://probe:s3cret@')}-unknown`;
    const ended = await runCli(['runs', 'list', '--redis', url, '--redis-timeout', '1']);
    assert.equal(ended.code, 4, ended.stderr);
    assert.match(
      ended.stderr,
      /probefleet: cannot reach Redis at redis-sentinel:\/\/probe:\*\*\*@127\.0\.0\.1:\d+,.*\/pfprimary-unknown: no answer within 1 s \(last error: All sentinels are unreachable/,
    );
    assert.doesNotMatch(ended.stderr, /s3cret/);
  });

  test("a connect cut short as ioredis's failover detector cuts it: our client and a BullMQ worker's connect again", async () => {
    // +switch-master while a client that lost its primary asks a sentinel for the new one: ioredis
    // rejects the connect ("Connection is closed.") and ends the client for good
    // (reconnectWhenCutShort, common/redis.ts). Cut here as the detector cuts it, at once.
    await sentinels.settled();
    await import('../../worker/fleet-worker.js'); // where BullMQ is told how to make a worker's clients
    const ours = createRedisClient({ url: sentinels.url }, 'cut-short') as Redis; // one server's client, not a Cluster's
    const workers = RedisConnection.clientFactory!(redisOptions({ url: sentinels.url }) as never) as unknown as Redis;
    for (const [who, client] of [
      ['ours', ours],
      ['a worker', workers],
    ] as const) {
      const errors: string[] = [];
      client.on('error', (err: Error) => errors.push(err.message));
      assert.equal(await client.ping(), 'PONG', who);
      client.disconnect(true);
      await once(client, 'connecting');
      (client as unknown as { connector: { disconnect(): void } }).connector.disconnect();
      for (let waited = 0; client.status !== 'ready' && waited < 15_000; waited += 50) await sleep(50);
      assert.ok(errors.includes('Connection is closed.'), `${who}: the connect was cut short (${errors.join('; ')})`);
      assert.equal(client.status, 'ready', `${who}: connected again`);
      assert.equal(await client.ping(), 'PONG', who);
      client.disconnect();
    }
  });
});
