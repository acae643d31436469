// A poison job is contained: a target that kills whatever process connects to it (kill -9, found
// by the socket's peer in `ss`), met by two real workers on real Redis. The first worker dies;
// the batch comes back once, to the other worker, which runs its jobs each in a process of its
// own: the killer takes that process, not the worker, the job ends KILLED_WORKER with its target
// in the report, and the batch's other jobs are measured. The target is met twice, no more.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { startLab, type Lab } from '../../lab/index.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';

const log = createLogger('test', 'silent');
const quiet = { update() {}, done() {} };

/** The pid of the process holding the client end of a connection to `port` from `peerPort`. */
function pidConnectingFrom(port: number, peerPort: number): number | undefined {
  const lines = execFileSync('ss', ['-tnpH', 'dst', `127.0.0.1:${port}`], { encoding: 'utf8' }).split('\n');
  const line = lines.find((l) => l.includes(`:${peerPort} `));
  const pid = line && /pid=(\d+)/.exec(line)?.[1];
  return pid ? Number(pid) : undefined;
}

describe('a job that kills its worker', needsRedis, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let fleet: Fleet;
  let killer: net.Server;
  const killed: number[] = [];
  const workers: CliProcess[] = [];

  before(async () => {
    requireRedis();
    lab = await startLab({ log });
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    killer = net.createServer((socket) => {
      socket.on('error', () => {});
      const port = (killer.address() as AddressInfo).port;
      const pid = pidConnectingFrom(port, socket.remotePort!);
      if (pid && pid !== process.pid) {
        killed.push(pid);
        process.kill(pid, 'SIGKILL');
      }
      socket.destroy();
    });
    await new Promise<void>((resolve) => killer.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    killer?.close();
    await fleet?.close();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('the first worker dies; the second contains it in a process of its own and measures the rest', async () => {
    for (let i = 0; i < 2; i++)
      workers.push(await startWorkerProcess('poison', TEST_REDIS_URL, prefix, ['--stall-timeout-seconds', '2']));
    const killerUrl = `http://127.0.0.1:${(killer.address() as AddressInfo).port}/`;
    const plan = await parsePlan(
      `name: poison
regions: [poison]
jobTimeoutSeconds: 20
targets:
  - { name: first, url: "${lab.url('keepalive')}" }
  - { name: killer, url: "${killerUrl}" }
  - { name: last, url: "${lab.url('keepalive')}" }
experiments: [{ probe: reuse, requests: 2, modes: [reused], timeoutMs: 2000 }]
`,
      'poison.yaml',
    );
    const run = await submitRun(fleet, plan, 'poison-run');
    const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
    assert.ok(report);
    const byTarget = Object.fromEntries(report.results.map((r) => [r.target, r]));
    assert.equal(byTarget.killer?.error?.code, 'KILLED_WORKER', JSON.stringify(byTarget.killer?.error));
    assert.equal(byTarget.first?.ok, true);
    assert.equal(byTarget.last?.ok, true, JSON.stringify(byTarget.last?.error));
    assert.deepEqual(report.unfinishedJobs, []);

    const dead = workers.filter((w) => w.child.exitCode !== null || w.child.signalCode !== null);
    assert.equal(dead.length, 1, 'one worker died; the other is still running');
    assert.equal(killed.length, 2, `the killer was met twice (the first worker, then the separate process): ${killed}`);
    assert.ok(!workers.some((w) => w.pid === killed[1]), 'the second kill took a process of its own, not a worker');
    const survivor = workers.find((w) => !dead.includes(w))!;
    assert.match(survivor.stderr(), /"probeJobId":"[^"]*killer[^"]*".*running in a process of its own/);
    assert.match(renderRunReport(report), /killer reuse[^\n]*KILLED_WORKER killed its worker/);
  });
});
