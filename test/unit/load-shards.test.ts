// A load spread over several workers (`workers: N`): the split shares the plan's load out exactly
// and puts each shard in a batch of its own; the merge adds the counts and merges the histograms,
// so the merged percentiles are those of every request together, never an average.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { batchesOf, jobPayloadSchema, type JobPayload } from '../../contracts/job.js';
import type { LoadDetails } from '../../contracts/probes/load.js';
import { runReportSchema, type ProbeResult, type ResultOf } from '../../contracts/result.js';
import {
  encodeHistogram,
  mergeHistograms,
  newLatencyHistogram,
  percentilesOf,
  recordMs,
} from '../../common/latency-histogram.js';
import { jobRefOf } from '../../coordinator/flow.js';
import { mergeShards } from '../../coordinator/load-shards.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { countJobs } from '../../coordinator/split.js';
import { jobsOf } from '../helpers/plans.js';
import { probeResult } from '../helpers/results.js';

const planWith = (load: string) => `
name: shards
regions: [a, b]
targets:
  - { name: web, url: "http://127.0.0.1:18170/" }
experiments:
  - { probe: reuse, requests: 5 }
  - { probe: load, ${load} }
`;

type Load = JobPayload & { probe: 'load' };
const loadJobs = (jobs: JobPayload[]) => jobs.filter((j): j is Load => j.probe === 'load');
const total = (values: (number | undefined)[]) => values.reduce<number>((a, b) => a + (b ?? 0), 0);

describe('splitting a load over several workers', () => {
  test('N shards per region and variant share connections and requests exactly, the first ones one more', async () => {
    const jobs = await jobsOf(planWith('connections: 10, requests: 1003, modes: [reused, new], workers: 4'));
    const load = loadJobs(jobs);
    assert.equal(load.length, 2 * 2 * 4, '2 regions x 2 modes x 4 workers');
    assert.equal(
      countJobs((await parsePlan(planWith('connections: 10, workers: 4'), 'p.yaml')).plan).total,
      2 * 2 + 2 * 4,
    );
    for (const job of jobs) assert.ok(jobPayloadSchema.safeParse(job).success, job.jobId);
    const shards = load.filter((j) => j.region === 'a' && j.variant.mode === 'new');
    assert.deepEqual(
      shards.map((j) => j.shard?.index),
      [0, 1, 2, 3],
    );
    assert.deepEqual(
      shards.map((j) => j.params.connections),
      [3, 3, 2, 2],
    );
    assert.deepEqual(
      shards.map((j) => j.params.requests),
      [251, 251, 251, 250],
    );
    assert.equal(total(shards.map((j) => j.params.requests)), 1003);
    const partOf = shards[0]!.shard!.partOf;
    assert.match(partOf, /^test-run\.a\.web\.load-new-closed-[0-9a-f]{10}$/);
    assert.deepEqual(
      shards.map((j) => j.jobId),
      [0, 1, 2, 3].map((i) => `${partOf}-shard-${i}`),
    );
    for (const shard of shards) {
      assert.deepEqual(shard.shard, { partOf, index: shard.shard!.index, count: 4, joinMs: 30_000 });
      assert.equal(shard.params.workers, undefined, "a shard's parameters are one worker's");
    }
  });

  test('an open loop shares its rate; joinSeconds travels with each shard', async () => {
    const load = loadJobs(
      await jobsOf(planWith('connections: 3, rate: 90, durationSeconds: 2, workers: 3, joinSeconds: 5')),
    );
    assert.deepEqual(
      load.filter((j) => j.region === 'b').map((j) => [j.params.rate, j.params.connections, j.shard?.joinMs]),
      [
        [30, 1, 5000],
        [30, 1, 5000],
        [30, 1, 5000],
      ],
    );
  });

  test('without workers (or workers: 1) a load is one job with the id it always had', async () => {
    const plain = loadJobs(await jobsOf(planWith('connections: 4')));
    const one = loadJobs(await jobsOf(planWith('connections: 4, workers: 1')));
    assert.equal(plain.length, 2);
    assert.ok(plain.every((j) => j.shard === undefined));
    assert.match(plain[0]!.jobId, /^test-run\.a\.web\.load-reused-closed-[0-9a-f]{10}$/);
    assert.equal(one.length, 2);
    assert.ok(one.every((j) => j.shard === undefined));
  });

  test('each shard is a batch of its own, however many jobs a batch may hold, for the submitter and the finisher alike', async () => {
    const jobs = await jobsOf(planWith('connections: 8, workers: 4'));
    const batches = batchesOf(jobs, 50);
    const refs = batchesOf(jobs.map(jobRefOf), 50);
    assert.deepEqual(
      refs.map((b) => b.id),
      batches.map((b) => b.id),
    );
    for (const batch of batches) {
      if (batch.jobs.some((j) => j.shard)) assert.equal(batch.jobs.length, 1, batch.id);
    }
    // Per region: the reuse job's batch, then one per shard.
    assert.equal(batches.length, 2 * (1 + 4));
  });
});

/** A load shard's result as a worker makes it, from the latencies it recorded (ms). */
function shardResult(
  index: number,
  count: number,
  latencies: number[],
  extra: Record<string, unknown> = {},
): ProbeResult {
  const histogram = newLatencyHistogram();
  for (const ms of latencies) recordMs(histogram, ms);
  const startedAt = new Date(Date.parse('2026-12-01T00:00:00.000Z') + index * 10);
  const details: LoadDetails = {
    loop: 'closed',
    mode: 'reused',
    connections: 2,
    concurrency: 2,
    completed: latencies.length,
    errors: index === 1 ? { CONNECTION_RESET: 1 } : {},
    statuses: { '2xx': latencies.length },
    connectionsOpened: 2,
    protocols: { 'http/1.1': 2 },
    requestsPerSecond: latencies.length,
    bodyBytes: latencies.length * 2,
    stoppedBy: 'duration',
    latencyMs: percentilesOf(histogram),
    latencyHistogram: encodeHistogram(histogram),
    client: { threads: 2, cores: 2, eventLoopUtilization: [0.5, 0.25 * index], cpuSeconds: 1 },
  };
  return probeResult({
    jobId: `run-1.a.web.load-reused-closed-0000000000-shard-${index}`,
    region: 'a',
    target: 'web',
    probe: 'load',
    variant: { mode: 'reused', loop: 'closed' },
    startedAt: startedAt.toISOString(),
    finishedAt: new Date(startedAt.getTime() + 1000).toISOString(),
    worker: { host: `w${index}`, pid: 100 + index, region: 'a' },
    shard: { partOf: 'run-1.a.web.load-reused-closed-0000000000', index, count },
    summary: {
      requests: latencies.length + (index === 1 ? 1 : 0),
      errors: index === 1 ? 1 : 0,
      connectionsOpened: 2,
      durationMs: 1000,
      phases: {},
    },
    details,
    ...extra,
  });
}

/** Deterministic latencies (ms): a fast body and, for some shards, a slow tail. */
const latenciesOf = (index: number, count: number) =>
  Array.from({ length: count }, (_, i) => 0.5 + ((i * 7 + index) % 20) / 10 + (index === 3 && i % 50 === 0 ? 200 : 0));

describe('merging the shards of a load', () => {
  const counts = [500, 499, 501, 480];
  const shards = counts.map((n, i) => shardResult(i, 4, latenciesOf(i, n)));
  const other = probeResult({
    jobId: 'run-1.a.web.reuse-reused-http-0000000000',
    probe: 'reuse',
    variant: { mode: 'reused', scheme: 'http' },
    details: null,
  });

  test('one result in the first shard’s place: counts added, percentiles from the merged histogram', () => {
    const merged = mergeShards([shards[2]!, other, shards[0]!, shards[3]!, shards[1]!]);
    assert.equal(merged.length, 2);
    assert.equal(merged[1], other, 'other results are left as they are');
    const result = merged[0] as ResultOf<'load'>;
    assert.equal(result.jobId, 'run-1.a.web.load-reused-closed-0000000000');
    assert.equal(result.shard, undefined);
    assert.equal(result.ok, true);
    const d = result.details!;
    assert.equal(d.completed, 500 + 499 + 501 + 480);
    assert.equal(d.latencyMs.n, d.completed);
    assert.equal(result.summary.requests, d.completed + 1);
    assert.equal(result.summary.errors, 1);
    assert.deepEqual(d.errors, { CONNECTION_RESET: 1 });
    assert.deepEqual(d.statuses, { '2xx': d.completed });
    assert.equal(d.connections, 8);
    assert.equal(d.connectionsOpened, 8);
    assert.deepEqual(d.protocols, { 'http/1.1': 8 });
    // Exactly the percentiles of all requests in one histogram; the mean of the shards' p99s is another number.
    const all = newLatencyHistogram();
    counts.forEach((n, i) => {
      for (const ms of latenciesOf(i, n)) recordMs(all, ms);
    });
    assert.deepEqual(d.latencyMs, percentilesOf(all));
    assert.equal(mergeHistograms([d.latencyHistogram]).totalCount, d.completed);
    const averagedP99 = shards.reduce((n, r) => n + (r as ResultOf<'load'>).details!.latencyMs.p99, 0) / shards.length;
    assert.notEqual(d.latencyMs.p99, averagedP99);
    assert.deepEqual(result.summary.phases.total?.n, d.completed);
    // The window runs from the first start to the last end: shard 3 started 30 ms after shard 0.
    assert.equal(result.summary.durationMs, 1030);
    assert.equal(d.requestsPerSecond, (d.completed * 1000) / 1030);
    assert.equal(result.startedAt, shards[0]!.startedAt);
    assert.deepEqual(
      d.shards!.map((s) => [s.index, s.worker.pid, s.completed, s.startOffsetMs]),
      [
        [0, 100, 500, 0],
        [1, 101, 499, 10],
        [2, 102, 501, 20],
        [3, 103, 480, 30],
      ],
    );
    assert.equal(d.shards![3]!.latencyMs.p99, (shards[3] as ResultOf<'load'>).details!.latencyMs.p99);
    // The load generator: every worker's threads, each with how busy it was.
    assert.deepEqual(d.client, {
      threads: 8,
      cores: 8,
      eventLoopUtilization: [0.5, 0, 0.5, 0.25, 0.5, 0.5, 0.5, 0.75],
      cpuSeconds: 4,
    });
  });

  test('a shard without a result fails the merged one, which names how many it has', () => {
    const [merged] = mergeShards(shards.slice(0, 3)) as ResultOf<'load'>[];
    assert.equal(merged!.ok, false);
    assert.equal(merged!.error?.code, 'SHARDS_NOT_TOGETHER');
    assert.match(merged!.error!.message, /^3 of 4 shards have a result/);
    assert.equal(merged!.details!.completed, 500 + 499 + 501);
  });

  test("a shard's error is the merged result's, naming the shard and its worker", () => {
    const apart = {
      code: 'SHARDS_NOT_TOGETHER' as const,
      message: 'only 3 of 4 workers of region "a" took a shard of this job within 30 s',
    };
    const failed = shardResult(2, 4, [], { ok: false, error: apart, details: null });
    const [merged] = mergeShards([shards[0]!, shards[1]!, failed, shards[3]!]) as ResultOf<'load'>[];
    assert.equal(merged!.ok, false);
    assert.deepEqual(merged!.error, {
      code: 'SHARDS_NOT_TOGETHER',
      message: `shard 2 of 4 (w2, pid 102): ${apart.message}`,
    });
    assert.equal(merged!.details!.shards!.length, 3, 'the figures of the shards that measured');
  });

  test('the run report holds the merged result, and a table of each worker’s part', async () => {
    const { plan } = await parsePlan(planWith('connections: 8, workers: 4'), 'p.yaml');
    const report = buildRunReport({
      runId: 'run-1',
      mode: 'distributed',
      plan,
      startedAt: new Date('2026-12-01T00:00:00.000Z'),
      finishedAt: new Date('2026-12-01T00:00:02.000Z'),
      results: shards,
    });
    runReportSchema.parse(JSON.parse(JSON.stringify(report)));
    assert.equal(report.results.length, 1);
    assert.equal(report.loadTotals[0]?.completed, 500 + 499 + 501 + 480);
    const text = renderRunReport(report);
    assert.match(text, /a\s+web\s+reused\s+8 conns, 4 workers\s+1,980\s/);
    assert.match(text, /Load spread over several workers: each worker's part/);
    assert.match(text, /a\s+web\s+reused\s+4\s+w3\s+103\s+\+30\.0 ms\s+2\s+480\s/);
  });
});
