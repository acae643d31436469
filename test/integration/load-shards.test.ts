// A load spread over several workers (`workers: N`) end to end: real worker processes (the CLI's
// `probefleet worker`) of one region on the test Redis (a prefix of its own), `probefleet run
// --redis`, the lab on loopback as the target. The shards run on different workers, start
// together, and the report has one result whose count is theirs together; too few workers end
// with a result saying so, within the shards' joinSeconds, not a wait without end.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runReportSchema, type ResultOf, type RunReport } from '../../contracts/result.js';
import { decodeHistogram } from '../../common/latency-histogram.js';
import { createLogger } from '../../common/log.js';
import { startLab, type Lab } from '../../lab/index.js';
import { writePlan } from '../helpers/plans.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');

describe('a load spread over several workers of a region', needsRedis, () => {
  const prefix = testPrefix();
  let lab: Lab;
  const workers: CliProcess[] = [];

  before(async () => {
    requireRedis();
    lab = await startLab({ log });
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  /** Starts workers of the region (each a process of its own), all taking jobs before it returns. */
  async function workersOf(region: string, count: number, extra: string[] = []): Promise<CliProcess[]> {
    const started = await Promise.all(
      Array.from({ length: count }, () => startWorkerProcess(region, TEST_REDIS_URL, prefix, extra)),
    );
    workers.push(...started);
    return started;
  }

  /** Runs the plan through Redis and returns its report and the merged load result. */
  async function runLoad(region: string, load: string) {
    const json = path.join(tempDir('probefleet-shards-'), 'run.json');
    const plan = await writePlan(`
name: spread-${region}
regions: [${region}]
jobTimeoutSeconds: 60
targets:
  - { name: http, url: "${lab.url('keepalive')}" }
experiments:
  - { probe: load, ${load} }
`);
    const startedAt = Date.now();
    const { code, stderr } = await runCli(
      ['run', plan, '--redis', TEST_REDIS_URL, '--prefix', prefix, '--json', json],
      {
        timeoutMs: 150_000,
      },
    );
    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    const loads = report.results.filter((r): r is ResultOf<'load'> => r.probe === 'load');
    assert.equal(loads.length, 1, 'the shards are one result in the report');
    return { code, stderr, report, result: loads[0]!, tookMs: Date.now() - startedAt };
  }

  test('4 workers: one merged histogram holding every request, each shard run by a different worker, started together', async (t) => {
    const four = await workersOf('a', 4);
    const { code, stderr, report, result } = await runLoad(
      'a',
      'connections: 8, requests: 4000, durationSeconds: 30, workers: 4',
    );
    assert.equal(code, 0, stderr);
    assert.deepEqual(report.unfinishedJobs, []);
    assert.ok(result.ok, JSON.stringify(result.error));
    assert.doesNotMatch(result.jobId, /-shard-/, "the merged result has the job's own id");
    const details = result.details!;
    const shards = details.shards!;
    assert.equal(shards.length, 4);
    assert.equal(details.completed, 4000, 'the requests of the plan, all answered');
    assert.equal(
      shards.reduce((n, s) => n + s.completed, 0),
      details.completed,
      'the total is the shards’ counts added',
    );
    assert.deepEqual(
      shards.map((s) => s.completed),
      [1000, 1000, 1000, 1000],
    );
    assert.equal(details.latencyMs.n, 4000);
    assert.equal(decodeHistogram(details.latencyHistogram).totalCount, 4000, 'one merged histogram of every request');
    assert.equal(details.connections, 8);
    assert.equal(details.connectionsOpened, 8);
    assert.deepEqual(
      new Set(shards.map((s) => s.worker.pid)),
      new Set(four.map((w) => w.pid)),
      'each shard on a worker of its own',
    );
    // Started at one instant on Redis's clock; a busy 2-vCPU machine may delay a worker's timer
    // by some hundreds of ms, never by the barrier's lead and more.
    t.diagnostic(`shards started ${shards.map((s) => s.startOffsetMs).join(', ')} ms after the first`);
    for (const shard of shards)
      assert.ok(shard.startOffsetMs < 1000, `shard ${shard.index} started ${shard.startOffsetMs} ms after the first`);
    assert.equal(result.summary.requests, 4000);
  });

  test('too few workers (2 for workers: 3): every shard ends saying how many of 3 workers took one, within its joinSeconds', async () => {
    await workersOf('b', 2);
    const { code, report, result, tookMs } = await runLoad(
      'b',
      'connections: 3, requests: 300, durationSeconds: 5, workers: 3, joinSeconds: 3',
    );
    assert.equal(code, 1, 'a run whose job failed');
    assert.deepEqual(report.unfinishedJobs, [], 'every shard has a result: none waits for a worker that never comes');
    assert.equal(result.ok, false);
    assert.equal(result.error?.code, 'SHARDS_NOT_TOGETHER');
    assert.match(
      result.error!.message,
      /only 2 of 3 workers of region "b" took a shard of this job within 3 s \(workers: 3\)/,
    );
    assert.equal(result.details, null, 'nothing was measured');
    assert.ok(tookMs < 60_000, `the run ended after ${tookMs} ms`);
  });

  test('a worker taking jobs 2 at a time runs no second shard of a job it holds one of', async () => {
    const [one] = await workersOf('c', 1, ['--concurrency', '2']);
    const { result } = await runLoad(
      'c',
      'connections: 2, requests: 200, durationSeconds: 5, workers: 2, joinSeconds: 3',
    );
    assert.equal(result.error?.code, 'SHARDS_NOT_TOGETHER');
    assert.match(result.error!.message, /only 1 of 2 workers of region "c" took a shard/);
    assert.equal(result.worker.pid, one!.pid);
  });
});
