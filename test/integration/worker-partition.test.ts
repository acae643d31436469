// A worker cut off from Redis in the middle of a batch (iptables DROP on the port of a socat relay
// that only it uses), while another worker of its region is connected: the cut-off worker stops
// the batch before its lock can expire, the other takes the batch over and finishes it, no job is
// measured by both at the same time, only the job in flight is said to have lost its worker, and
// once the cut-off worker is back its late writes change nothing (fenced by the batch's lock).
import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { reportKeys } from '../../contracts/queues.js';
import { createLogger } from '../../common/log.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { forward, signalGroup } from '../helpers/held-replication.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { freePort, requireRedis, startOwnRedis, testPrefix, type OwnRedis } from '../helpers/redis.js';

const log = createLogger('test', 'silent');
const quiet = { update() {}, done() {} };
/** Lock 2 s, stall check every 2 s: the cut-off worker's lease ends 1.5 s after its last renewal. */
const FAST_STALL = ['--stall-timeout-seconds', '4'];
const TARGETS = 2;
/** A job lasts ~8 s: longer than it takes the other worker to take the batch over (2-6 s). */
const REQUESTS_PER_JOB = 80;
/** Each request is answered this late: a job takes about REQUESTS_PER_JOB times this. */
const ANSWER_DELAY_MS = 100;

/** Why the test cannot run here, or false: it needs root (iptables), iptables-legacy and socat. */
function missing(): string | false {
  if (process.getuid?.() !== 0) return 'needs root (iptables rules on a port of its own)';
  for (const [command, pkg] of [
    ['iptables-legacy', 'iptables'],
    ['socat', 'socat'],
  ]) {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    } catch {
      return `needs ${command}: apt-get install ${pkg} (bash test/services/ensure.sh)`;
    }
  }
  return false;
}
const cannotRun = missing();

interface Request {
  target: string;
  socket: number;
  start: number;
  end: number;
}

/** Answers /t1, /t2, ... after ANSWER_DELAY_MS, noting each request's target, connection and times. */
async function startRecordingServer(): Promise<{ url: string; requests: Request[]; close(): Promise<void> }> {
  const requests: Request[] = [];
  const sockets = new WeakMap<Socket, number>();
  let nextSocket = 0;
  const server = http.createServer((req, res) => {
    const start = performance.now();
    if (!sockets.has(req.socket)) sockets.set(req.socket, nextSocket++);
    const socket = sockets.get(req.socket)!;
    setTimeout(() => {
      res.end('ok');
      requests.push({ target: (req.url ?? '').slice(1), socket, start, end: performance.now() });
    }, ANSWER_DELAY_MS);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** iptables rules dropping everything to and from a port on this machine; `remove` undoes them. */
function dropPort(port: number): { remove(): void } {
  const rules = [
    ['INPUT', '-p', 'tcp', '--dport', String(port), '-j', 'DROP'],
    ['INPUT', '-p', 'tcp', '--sport', String(port), '-j', 'DROP'],
  ];
  for (const rule of rules) execFileSync('iptables-legacy', ['-I', ...rule]);
  let removed = false;
  return {
    remove() {
      if (removed) return;
      removed = true;
      for (const rule of rules) execFileSync('iptables-legacy', ['-D', ...rule]);
    },
  };
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`not within ${timeoutMs} ms: ${what}`);
    await sleep(50);
  }
}

describe('a worker cut off from Redis mid-batch', { skip: process.env.CI === 'true' ? false : cannotRun }, () => {
  let redis: OwnRedis;
  let relay: ChildProcess;
  let relayPort: number;
  let server: Awaited<ReturnType<typeof startRecordingServer>>;
  let fleet: Fleet;
  const prefix = testPrefix();
  const processes: CliProcess[] = [];
  let partition: { remove(): void } | undefined;

  before(async () => {
    if (cannotRun) assert.fail(cannotRun);
    requireRedis();
    redis = await startOwnRedis({ persistence: 'none' });
    relayPort = await freePort();
    // Listening before anything else of the test takes a port: the server below, on port 0, could
    // otherwise be given the relay's port, and the worker would talk to it.
    relay = await forward(relayPort, redis.port);
    server = await startRecordingServer();
    fleet = openFleet({ redis: { url: redis.url }, prefix, log });
  });
  after(async () => {
    partition?.remove();
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    signalGroup(relay, 'SIGKILL');
    await fleet?.close();
    await server?.close();
    await redis?.stop();
  });

  test('it stops before its lock expires, another worker finishes the batch, no job is measured twice at once, and its late writes change nothing', async () => {
    const cutOff = await startWorkerProcess('a', `redis://127.0.0.1:${relayPort}`, prefix, FAST_STALL, {
      PROBEFLEET_LOG_LEVEL: 'debug',
    });
    processes.push(cutOff);
    const targets = Array.from({ length: TARGETS }, (_, i) => `t${i + 1}`);
    const plan = `
name: partitioned
regions: [a]
jobTimeoutSeconds: 30
targets:
${targets.map((t) => `  - { name: ${t}, url: "${server.url}/${t}" }`).join('\n')}
experiments:
  - { probe: reuse, requests: ${REQUESTS_PER_JOB}, modes: [reused] }
`;
    // One batch of all the jobs, so that the batch outlives the partition.
    const run = await submitRun(fleet, await parsePlan(plan, 'inline.yaml'), 'partitioned-run', {
      jobsPerBatch: TARGETS,
      deadlineSeconds: 300,
    });
    assert.equal(run.jobs.length, TARGETS);
    const other = await startWorkerProcess('a', redis.url, prefix, FAST_STALL);
    processes.push(other);

    // Cut off while the batch's first job is under way.
    await until(() => server.requests.length > 0, 'the cut-off worker starts the batch');
    partition = dropPort(relayPort);
    const inFlight = server.requests.at(-1)!.target;

    const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
    assert.ok(report);
    assert.deepEqual(report.unfinishedJobs, []);
    assert.deepEqual(report.results.map((r) => r.target).sort(), [...targets].sort(), 'every job exactly once');
    for (const result of report.results) assert.equal(result.summary.requests, REQUESTS_PER_JOB, result.target);
    assert.deepEqual(
      report.results.filter((r) => r.workersLost !== undefined).map((r) => [r.target, r.workersLost]),
      [[inFlight, 1]],
      'only the job in flight when its worker was cut off says so',
    );
    for (const result of report.results)
      assert.equal(result.worker.pid, other.pid, `${result.target}: measured by the worker that took the batch over`);

    // No target was measured over two connections at once: the cut-off worker had stopped.
    for (const target of targets) {
      const spans = new Map<number, { start: number; end: number }>();
      for (const r of server.requests.filter((q) => q.target === target)) {
        const span = spans.get(r.socket) ?? { start: r.start, end: r.end };
        spans.set(r.socket, { start: Math.min(span.start, r.start), end: Math.max(span.end, r.end) });
      }
      const ordered = [...spans.values()].sort((a, b) => a.start - b.start);
      for (let i = 1; i < ordered.length; i++)
        assert.ok(
          ordered[i]!.start >= ordered[i - 1]!.end,
          `${target}: two connections measured it at once (${JSON.stringify(ordered)})`,
        );
    }
    assert.match(
      cutOff.stderr(),
      /stopped before the lock can expire.*"msg":"batch stopped: this worker's hold on it ended/,
      'the cut-off worker says why it stopped',
    );

    // Back again: its writes queued meanwhile reach Redis, fenced by a lock that is no longer its.
    partition.remove();
    assert.equal(await other.stop(), 0);
    const next = await submitRun(
      fleet,
      await parsePlan(
        plan
          .replace('name: partitioned', 'name: after-partition')
          .replace(`requests: ${REQUESTS_PER_JOB}`, 'requests: 3'),
        'inline.yaml',
      ),
      'after-partition-run',
      { deadlineSeconds: 300 },
    );
    const afterReport = await waitForRun(fleet, next.data, { log, progress: quiet, pollMs: 200 });
    assert.ok(afterReport);
    assert.deepEqual(afterReport.unfinishedJobs, []);
    assert.ok(
      afterReport.results.every((r) => r.worker.pid === cutOff.pid),
      'the worker that was cut off runs jobs again',
    );
    assert.equal(
      await fleet.client.exists(reportKeys.results(prefix, run.runId)),
      0,
      "no late write re-created the first run's results",
    );
    const stored = await fleet.store.get(run.runId);
    assert.deepEqual(stored?.results, report.results, 'the stored report is what it was');
  });
});
