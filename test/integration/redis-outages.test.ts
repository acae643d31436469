// Redis outages, with redis-servers of the test's own: nothing is stubbed, Redis is a closed
// port or a server killed with SIGKILL. Every command that talks to Redis ends on its own within
// its documented bound, says what it could not reach (password hidden) and exits 4; workers and
// the coordinator stop on SIGTERM within theirs; the coordinator's /metrics answers while Redis
// is down; and at start it says whether Redis persists (docs/distributed.md, "Operating it").
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { startCoordinator } from '../../coordinator/coordinator-service.js';
import { RUN_END_SLACK_SECONDS } from '../../coordinator/distributed-run.js';
import { openFleet } from '../../coordinator/fleet.js';
import { FLEET_CLOSE_BOUND_MS } from '../../coordinator/fleet-connection.js';
import { startLab, type Lab } from '../../lab/index.js';
import { captureLog } from '../helpers/logs.js';
import { writePlan } from '../helpers/plans.js';
import { spawnCli, startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { freePort, needsRedis, requireRedis, startOwnRedis, testPrefix, type OwnRedis } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { EXIT_LINGER_MS } from '../../cli/exit-codes.js';

const log = createLogger('test', 'silent');
const REDIS_TIMEOUT_SECONDS = 1;
/**
 * What a process needs besides its documented bound once it is running: Node's start and module
 * loading come first, and load on the machine stretches them without limit (1-3 s for `run` here
 * alone, 10 s under `stress-ng --cpu 2` beside the suite), so bounds on a command are counted from
 * its first log line (the time pino stamped on it), and bounds on a running process from the
 * signal that stops it; this slack covers timers firing late and the exit itself on a busy machine.
 */
const PROCESS_SLACK_MS = 3_000;
/** Closing a fleet with Redis away: a goodbye, then cutting the connections, each bounded (coordinator/fleet.ts). */
const FLEET_CLOSE_MS = 2 * FLEET_CLOSE_BOUND_MS;

/** When the process stamped its first log line (epoch ms), from its stderr. */
function firstLogTime(stderr: string): number {
  for (const line of stderr.split('\n')) {
    try {
      const { time } = JSON.parse(line) as { time?: unknown };
      if (typeof time === 'number') return time;
    } catch {
      // not a log line
    }
  }
  assert.fail(`no log line in:\n${stderr}`);
}

/** A plan with one slow job (reused requests to the Nagle endpoint, ~40 ms each) in region a. */
function slowPlan(lab: Lab, name: string, extra = ''): string {
  return `
name: ${name}
regions: [a]
jobTimeoutSeconds: 1
targets: [{ name: slow, url: "${lab.url('keepalive', '/nagle')}" }]
experiments: [{ probe: reuse, requests: 200, modes: [reused] }]
${extra}`;
}

/** The coordinator's /metrics, within 2 s, or the reason it did not answer. */
async function scrape(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2_000) });
  return res.text();
}

function metricValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Seconds from `start` to when the process exits, with its exit code; fails (with what the
 * process logged) if it is still running after `limitSeconds`. */
async function exitAfter(
  process: CliProcess,
  start: number,
  limitSeconds: number,
): Promise<{ code: number | null; seconds: number }> {
  // Unref'd: once the process exited, the timer must not keep this test file alive.
  const code = await Promise.race([
    process.exited,
    sleep(limitSeconds * 1000 - (Date.now() - start), 'running' as const, { ref: false }),
  ]);
  if (code === 'running') assert.fail(`still running after ${limitSeconds} s:\n${process.stderr()}`);
  return { code, seconds: (Date.now() - start) / 1000 };
}

describe('Redis unreachable or gone', needsRedis, () => {
  let lab: Lab;
  const processes: CliProcess[] = [];

  before(async () => {
    requireRedis(); // redis-server comes with the same package
    lab = await startLab({ log });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await lab?.close();
  });

  test('a closed port: run, runs and schedule each end within --redis-timeout and closing, exit 4 and name the URL without its password', async () => {
    const url = `redis://probe:s3cret@127.0.0.1:${await freePort()}`;
    const plan = await writePlan(slowPlan(lab, 'closed-port'));
    const redis = ['--redis', url, '--redis-timeout', String(REDIS_TIMEOUT_SECONDS)];
    const commands = [
      ['run', plan, ...redis, '--deadline', '20'],
      ['runs', 'list', ...redis],
      ['runs', 'show', 'some-run', ...redis],
      ['schedule', 'add', plan, '--every', '60', ...redis],
      ['schedule', 'list', ...redis],
      ['schedule', 'remove', 'closed-port', ...redis],
    ];
    const outcomes = [];
    for (const args of commands) {
      const ran = await runCli(args);
      outcomes.push({ args, ...ran, seconds: (Date.now() - firstLogTime(ran.stderr)) / 1000 });
    }
    for (const { args, code, stderr, seconds } of outcomes) {
      const what = args.slice(0, 2).join(' ');
      assert.equal(code, 4, `${what}: exit 4\n${stderr}`);
      assert.match(
        stderr,
        new RegExp(
          `probefleet: cannot reach Redis at redis://probe:\\*\\*\\*@127\\.0\\.0\\.1:\\d+: no answer within ${REDIS_TIMEOUT_SECONDS} s \\(last error: connect ECONNREFUSED`,
        ),
        what,
      );
      assert.doesNotMatch(stderr, /s3cret/, `${what}: the password stays out`);
      // Redis errors are logged at warn (level 40), not hidden at debug.
      assert.match(stderr, /"level":40,.*"msg":"fleet: redis error"/, what);
      // From its first attempt to reach Redis: --redis-timeout, then closing the fleet.
      assert.ok(
        seconds * 1000 <= REDIS_TIMEOUT_SECONDS * 1000 + FLEET_CLOSE_MS + PROCESS_SLACK_MS,
        `${what} ended ${seconds} s after its first log line`,
      );
    }
  });

  test('a worker that never reached Redis (a closed port) stops on SIGTERM within its grace + 10 s', async () => {
    const worker = spawnCli([
      'worker',
      '--region',
      'a',
      '--redis',
      `redis://127.0.0.1:${await freePort()}`,
      '--shutdown-grace-seconds',
      '1',
    ]);
    processes.push(worker);
    await worker.waitFor(/"msg":"worker: redis error"/);
    const stoppedAt = Date.now();
    worker.child.kill('SIGTERM');
    const { code, seconds } = await exitAfter(worker, stoppedAt, 1 + 10 + PROCESS_SLACK_MS / 1000);
    assert.equal(code, 0, worker.stderr());
    assert.ok(seconds <= 1 + 10 + PROCESS_SLACK_MS / 1000, `it took ${seconds} s`);
    assert.match(worker.stderr(), /"msg":"worker stopped"/);
  });

  test('a worker whose connection reaches itself (nothing listens on a port of the ephemeral range) says so, does not spin, and stops on SIGTERM', async (t) => {
    if (process.getuid?.() !== 0) {
      if (process.env.CI === 'true') assert.fail('needs root: it makes a network namespace of its own');
      return t.skip('needs root (a network namespace of its own): run as root, as CI does');
    }
    // A namespace whose only source port is the port connected to: every connect joins itself.
    const namespace = `probefleet-selfconnect-${process.pid}`;
    const port = '40000';
    execFileSync('ip', ['netns', 'add', namespace]);
    try {
      execFileSync('ip', ['netns', 'exec', namespace, 'ip', 'link', 'set', 'lo', 'up']);
      execFileSync('ip', ['netns', 'exec', namespace, 'sysctl', '-qw', `net.ipv4.ip_local_port_range=${port} ${port}`]);
      const worker = spawnCli(
        ['worker', '--region', 'a', '--redis', `redis://127.0.0.1:${port}`, '--shutdown-grace-seconds', '1'],
        {},
        ['ip', 'netns', 'exec', namespace],
      );
      processes.push(worker);
      await worker.waitFor(/"err":"connected to itself: nothing listens at 127\.0\.0\.1:40000/);
      // Refused and tried again at ioredis's pace, not read back in a loop.
      const cpuSeconds = () => {
        const fields = readFileSync(`/proc/${worker.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
        return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks
      };
      const [cpuBefore, before] = [cpuSeconds(), Date.now()];
      await sleep(3_000);
      const share = (cpuSeconds() - cpuBefore) / ((Date.now() - before) / 1000);
      assert.ok(share < 0.5, `the worker used ${Math.round(share * 100)} % of a CPU while it could not connect`);
      const stoppedAt = Date.now();
      worker.child.kill('SIGTERM');
      const { code } = await exitAfter(worker, stoppedAt, 1 + 10 + PROCESS_SLACK_MS / 1000);
      assert.equal(code, 0, worker.stderr());
      assert.doesNotMatch(worker.stderr(), /doc\.split is not a function/);
    } finally {
      execFileSync('ip', ['netns', 'delete', namespace]);
    }
  });

  describe('Redis killed (kill -9) in the middle of a run', () => {
    let redis: OwnRedis;
    const prefix = testPrefix();
    let busy: CliProcess;
    let idle: CliProcess;
    let coordinator: CliProcess;
    let coordinatorUrl: string;
    let run: CliProcess;
    let submittedAt: number;

    before(async () => {
      redis = await startOwnRedis();
      const fleetArgs = ['--redis', redis.url, '--prefix', prefix];
      [busy, idle] = await Promise.all([
        startWorkerProcess('a', redis.url, prefix, ['--shutdown-grace-seconds', '1', '--stall-timeout-seconds', '4']),
        startWorkerProcess('b', redis.url, prefix, ['--shutdown-grace-seconds', '1']),
      ]);
      coordinator = spawnCli([
        'coordinator',
        ...fleetArgs,
        '--port',
        '0',
        '--sweep-interval-ms',
        '500',
        '--redis-timeout',
        '1',
      ]);
      processes.push(busy, idle, coordinator);
      await coordinator.waitFor(/"msg":"coordinator ready"/);
      coordinatorUrl = /"url":"(http:\/\/[^"]+)"/.exec(coordinator.stderr())![1]!;
      const plan = await writePlan(slowPlan(lab, 'redis-killed'));
      submittedAt = Date.now();
      run = spawnCli([
        'run',
        plan,
        ...fleetArgs,
        '--run-id',
        'redis-killed-run',
        '--deadline',
        '1',
        // The default: each read of Redis may wait this long, and none past the run's end.
        '--redis-timeout',
        '10',
      ]);
      processes.push(run);
      const probe = openFleet({ redis: { url: redis.url }, prefix, log });
      try {
        for (let i = 0; i < 200 && (await probe.regionQueue('a').getActiveCount()) === 0; i++) await sleep(50);
        assert.equal(await probe.regionQueue('a').getActiveCount(), 1, 'the job is running');
      } finally {
        await probe.close();
      }
      // A worker can take the job before `run` has finished submitting (on a busy machine, seconds
      // before): Redis goes only once the run waits.
      await run.waitFor(/submitted to .*waiting until/, 60_000);
      await redis.kill();
    });
    after(async () => redis?.stop());

    test("the coordinator's /metrics answers from memory while Redis is down, with probefleet_redis_up 0", async () => {
      let text = '';
      for (let i = 0; i < 40; i++) {
        text = await scrape(coordinatorUrl);
        if (metricValue(text, 'probefleet_redis_up') === 0) break;
        await sleep(250);
      }
      assert.equal(metricValue(text, 'probefleet_redis_up'), 0);
      assert.doesNotMatch(text, /^probefleet_queue_jobs\{/m, 'no stale queue depths');
      const health = await fetch(`${coordinatorUrl}/healthz`, { signal: AbortSignal.timeout(3_000) });
      assert.equal(health.status, 503);
    });

    test('SIGTERM while Redis is down: an idle worker, a worker with a job in flight and the coordinator exit within their bounds', async () => {
      const stoppedAt = Date.now();
      for (const p of [busy, idle, coordinator]) p.child.kill('SIGTERM');
      const limit = 1 + 10 + PROCESS_SLACK_MS / 1000;
      const [b, i, c] = await Promise.all([busy, idle, coordinator].map((p) => exitAfter(p, stoppedAt, limit)));
      // Worker: --shutdown-grace-seconds (1) + 10 s; the coordinator: 10 s without a run being finished.
      assert.equal(b.code, 0, busy.stderr());
      assert.ok(b.seconds <= 1 + 10 + PROCESS_SLACK_MS / 1000, `the busy worker took ${b.seconds} s`);
      // The job's lease may end first (no renewal answered): then the worker stopped it itself.
      assert.match(busy.stderr(), /jobs in flight could not be handed back|"handedBack":false/);
      assert.match(busy.stderr(), /"outcome":"(abandoned|drained)"/);
      assert.equal(i.code, 0, idle.stderr());
      assert.ok(i.seconds <= 1 + 10 + PROCESS_SLACK_MS / 1000, `the idle worker took ${i.seconds} s`);
      assert.match(idle.stderr(), /"outcome":"drained"/);
      assert.equal(c.code, 0, coordinator.stderr());
      assert.ok(c.seconds <= 10 + PROCESS_SLACK_MS / 1000, `the coordinator took ${c.seconds} s`);
      assert.match(coordinator.stderr(), /"msg":"coordinator stopped"/);
    });

    test("run --redis waits Redis out until the run's end, then exits 4 saying what it could not reach", async () => {
      const end = 1 + 1 + RUN_END_SLACK_SECONDS; // --deadline, jobTimeoutSeconds, the slack
      const { code } = await exitAfter(run, submittedAt, end + 2 * 10 + 60);
      const exitedAt = Date.now();
      assert.equal(code, 4, run.stderr());
      // The run's end as the run computed it from its own submit (deadline + jobTimeoutSeconds + slack).
      const waitedUntil = Date.parse(/waiting until (\S+) at most/.exec(run.stderr())![1]!);
      assert.equal(
        waitedUntil - Date.parse(/deadline (\S+);/.exec(run.stderr())![1]!),
        (1 + RUN_END_SLACK_SECONDS) * 1000,
      );
      assert.ok(exitedAt >= waitedUntil, `it waited for the run's end: exited ${exitedAt - waitedUntil} ms from it`);
      // No read of Redis is waited for past the run's end (however long --redis-timeout): then one
      // recheck of a second, closing, and the process ends whatever its Redis client left pending.
      const bound = 1_000 + FLEET_CLOSE_MS + EXIT_LINGER_MS + PROCESS_SLACK_MS;
      assert.ok(
        exitedAt - waitedUntil <= bound,
        `it exited ${exitedAt - waitedUntil} ms after the run's end:\n${run.stderr()}`,
      );
      assert.match(
        run.stderr(),
        /probefleet: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: no answer since \S+, and the run's wait ended at \S+; the run goes on in the fleet \(probefleet runs show redis-killed-run\)/,
      );
      assert.match(run.stderr(), /"level":40,.*cannot read the run from Redis; retrying/);
    });

    test('Redis back (its append-only file kept the run): a coordinator reports the abandoned job as lost, naming its worker', async () => {
      await redis.start();
      const next = spawnCli(['coordinator', '--redis', redis.url, '--prefix', prefix, '--port', '0']);
      processes.push(next);
      await next.waitFor(/"msg":"coordinator ready"/);
      let shown = { code: 1, stdout: '', stderr: '' };
      for (let i = 0; i < 60 && shown.code !== 0; i++) {
        await sleep(500);
        shown = await runCli(['runs', 'show', 'redis-killed-run', '--json', '--redis', redis.url, '--prefix', prefix]);
      }
      assert.equal(shown.code, 0, shown.stderr);
      const report = JSON.parse(shown.stdout) as { unfinishedJobs: { reason: string; workersLost?: number }[] };
      assert.equal(report.unfinishedJobs.length, 1);
      assert.equal(report.unfinishedJobs[0]!.workersLost, 1);
      assert.match(
        report.unfinishedJobs[0]!.reason,
        new RegExp(`^its worker \\(\\S+-${busy.pid}\\) was lost while running it \\(its lock expired`),
      );
      await next.stop();
    });
  });
});

describe('the coordinator checks at start whether Redis persists', needsRedis, () => {
  const servers: OwnRedis[] = [];
  after(async () => Promise.all(servers.map((s) => s.stop())));

  /** Starts a coordinator on the server and returns what it logged and its persistence gauge. */
  async function persistenceSeen(redis: OwnRedis, url = redis.url): Promise<{ logs: string; metrics: string }> {
    const logs = captureLog('info', 'coordinator');
    const fleet = openFleet({ redis: { url }, prefix: testPrefix(), log });
    const coordinator = await startCoordinator({ fleet, log: logs.log, listen: { host: '127.0.0.1', port: 0 } });
    try {
      return { logs: logs.text(), metrics: await scrape(coordinator.url) };
    } finally {
      await coordinator.close();
      await fleet.close();
    }
  }

  const gauge = (metrics: string) =>
    metrics
      .split('\n')
      .filter((l) => l.startsWith('probefleet_redis_persistence{') && l.endsWith(' 1'))
      .map((l) => /persistence="(\w+)"/.exec(l)![1]);

  test('no persistence: a loud warning of what a restart loses; snapshots only: a warning; AOF: said at info', async () => {
    for (const [persistence, level, message] of [
      [
        'none',
        40,
        /REDIS DOES NOT PERSIST: a Redis restart loses every schedule, the runs in flight and the stored reports/,
      ],
      ['rdb', 40, /Redis persists by snapshots only/],
      ['aof', 30, /Redis persists every write \(append-only file\)/],
    ] as const) {
      const redis = await startOwnRedis({ persistence });
      servers.push(redis);
      const { logs, metrics } = await persistenceSeen(redis);
      assert.match(logs, new RegExp(`"level":${level},.*${message.source}`), persistence);
      assert.deepEqual(gauge(metrics), [persistence]);
    }
  });

  test('an ACL user without CONFIG (the ACL of docs/deploy.md): INFO tells AOF; without AOF it cannot tell, and says so', async () => {
    for (const persistence of ['aof', 'none'] as const) {
      const redis = await startOwnRedis({
        persistence,
        args: () => [
          '--user',
          'default',
          'off',
          '--user',
          'probefleet',
          'on',
          '>pw',
          '~*',
          '&*',
          '+@all',
          '-@dangerous',
          '+info',
          '+client|list',
          '+client|setname',
          '+client|getname',
        ],
        url: (port) => `redis://probefleet:pw@127.0.0.1:${port}`,
      });
      servers.push(redis);
      const { logs, metrics } = await persistenceSeen(redis);
      if (persistence === 'aof') {
        assert.match(logs, /"level":30,.*INFO aof_enabled:1 \(CONFIG GET: NOPERM/);
        assert.deepEqual(gauge(metrics), ['aof']);
      } else {
        assert.match(
          logs,
          /"level":40,.*CONFIG GET refused \(NOPERM.*INFO says AOF is off.*cannot tell whether Redis persists/,
        );
        assert.deepEqual(gauge(metrics), ['unknown']);
      }
    }
  });
});
