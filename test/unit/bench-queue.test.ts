// The queue benchmark's plans have the job counts its results claim, and its results render the
// issue's queue targets, met or missed, also when it ran alone (`npm run bench -- --only queue`).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  END_TO_END_SHAPE,
  ENQUEUE_SHAPE,
  jobsOf,
  queuePlanYaml,
  type EndToEndRun,
  type EnqueueRun,
  type QueueRound,
} from '../../bench/queue.js';
import { renderResults, type BenchResults } from '../../bench/results-markdown.js';
import type { LoadRun } from '../../bench/tools.js';
import type { Measured } from '../../bench/measure.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { splitPlan } from '../../coordinator/split.js';

const measured: Measured = {
  stdout: '',
  wallSeconds: 1,
  cpuSeconds: 1,
  maxRssKb: 100 * 1024,
  serverCpuSeconds: 1,
  loadAverage: 1,
};

function enqueueRun(tool: EnqueueRun['tool'], jobsPerSecond: number): EnqueueRun {
  const jobsPerBatch = tool === 'batched' ? 31 : 1;
  return {
    tool,
    jobs: 100_000,
    jobsPerBatch,
    splitMs: 1_000,
    enqueueMs: 100_000_000 / jobsPerSecond,
    jobsPerSecond,
    measured,
  };
}

function endToEndRun(tool: EndToEndRun['tool'], jobsPerSecond: number, workerCpuSeconds = 4): EndToEndRun {
  const enqueue = enqueueRun('per-job', 5_000);
  return {
    tool,
    jobs: 10_000,
    errors: 0,
    seconds: 10_000 / jobsPerSecond,
    jobsPerSecond,
    workerCpuSeconds,
    workerPeakRssKb: 200 * 1024,
    redisCpuSeconds: 1,
    enqueue,
    loadAverage: 1,
  };
}

/** `workers`: probefleet's jobs/s and worker CPU seconds over 10,000 jobs; the fair floor does
 * 1,000 jobs/s at 4 s. */
function queueOnly(batched: number, perJob: number, workers: [number, number]): BenchResults {
  const round: QueueRound = {
    ceiling: { lpushPipelined: 1_000_000, lpushTwoClients: 20_000 },
    probeLoop: { jobs: 3_000, seconds: 6, jobsPerSecond: 500, measured },
    enqueue: [enqueueRun('batched', batched), enqueueRun('per-job', perJob)],
    endToEnd: [
      endToEndRun('probefleet', ...workers),
      endToEndRun('bullmq-undici', 1_000, 4),
      endToEndRun('bullmq', 2_500, 2),
      endToEndRun('probefleet-batched', 2_000, 2),
      endToEndRun('bullmq-undici-batched', 2_000, 2),
    ],
  };
  return {
    machine: {
      date: '',
      cpu: '',
      memoryGiB: 1,
      os: '',
      node: '',
      undici: '',
      hdrHistogram: '',
      autocannon: '',
      curl: '',
      wrk: '',
      nginx: '',
      redis: '',
      bullmq: '',
      commit: '',
    },
    settings: { only: ['queue'], rounds: 5, queueRounds: 1, requests: 200, connections: 10, seconds: 10 },
    queue: [round],
    profiles: {},
  };
}

describe('queue benchmark', () => {
  test('its plans split into 100,000 and 10,000 distinct jobs', async () => {
    for (const [shape, expected] of [
      [ENQUEUE_SHAPE, 100_000],
      [END_TO_END_SHAPE, 10_000],
    ] as const) {
      const jobs = splitPlan(
        await parsePlan(queuePlanYaml('bench-test', shape, 'http://127.0.0.1:1/'), 'bench-test.yaml', {
          maxJobs: expected,
        }),
        'bench-test-run',
      );
      assert.equal(jobsOf(shape), expected);
      assert.equal(new Set(jobs.map((job) => job.jobId)).size, expected);
    }
  });

  test('results of the queue benchmark alone render its targets and say which were missed', () => {
    const missedAll = renderResults(queueOnly(2_000, 6_000, [300, 10]));
    assert.deepEqual(missedAll.missed, { sequential: false, load: false, h2: false, enqueue: true, endToEnd: true });
    assert.match(
      missedAll.markdown,
      /\| submit a run of 100,000 jobs as the coordinator does .* \| 2,000\/s \| ≥ 30,000\/s: \*\*missed\*\* by 93% \|/,
    );
    assert.match(missedAll.markdown, /\| the submitting process's peak RSS meanwhile \| 100 MB \| < 400 MB: met \|/);
    assert.match(
      missedAll.markdown,
      /\| 10,000 one-request jobs .* over the fair floor.* \| 0\.30x \(300\/s vs 1,000\/s\) \| ≥ 0\.8x: \*\*missed\*\* by 63% \|/,
    );
    assert.match(
      missedAll.markdown,
      /\| worker CPU per job beyond .* \| 600 µs \| ≤ 200 µs: \*\*missed\*\* by 200% \|/,
    );
    assert.match(missedAll.markdown, /npm run bench -- --only queue --rounds 5 --queue-rounds 1/);
    assert.doesNotMatch(missedAll.markdown, /## Sequential|## Load|## Peak RSS/);

    const metAll = renderResults(queueOnly(35_000, 30_000, [900, 5]));
    assert.deepEqual(metAll.missed, { sequential: false, load: false, h2: false, enqueue: false, endToEnd: false });
    assert.doesNotMatch(metAll.markdown, /missed/);
  });
});

describe('HTTP/2 load benchmark', () => {
  const shape = { connections: 2, streams: 10, seconds: 5 };
  const run = (tool: LoadRun['tool'], requestsPerSecond: number, busiest?: number): LoadRun => ({
    tool,
    requests: requestsPerSecond * 5,
    seconds: 5,
    requestsPerSecond,
    p99Ms: Number.NaN,
    errors: 0,
    measured,
    ...(busiest === undefined ? {} : { busiest }),
  });
  const results = (probefleet: number[]): BenchResults => ({
    ...queueOnly(35_000, 30_000, [900, 5]),
    settings: { only: ['h2'], rounds: 2, queueRounds: 1, requests: 200, connections: 10, seconds: 10 },
    queue: undefined,
    h2: {
      shape,
      rounds: probefleet.map((rps) => [
        run('probefleet', rps, 0.97),
        run('probefleet 2 threads', rps * 1.5, 0.8),
        run('node:http2', 5_000),
        run('node:http2, undici loaded', 4_600),
        run('h2load', 25_000),
      ]),
    },
  });

  test('probefleet against the bare node:http2 loop: met at 0.9x, the rounds and the scaling shown', () => {
    const met = renderResults(results([4_600, 4_500]));
    assert.equal(met.missed.h2, false);
    assert.match(
      met.markdown,
      /\| nginx over TLS, HTTP\/2 load at least 0\.9x a bare node:http2 loop \(2 connections x 10 streams, 5 s\) \| 0\.91x \| met \|/,
    );
    assert.match(met.markdown, /\| 1 \| probefleet \| 4,600 \| - \| 0 \| 97% \|/);
    assert.match(met.markdown, /2 threads \/ 1 thread: 1\.50, 1\.50 \(median \*\*1\.50x\*\*\)/);
    assert.match(met.markdown, /npm run bench -- --only h2 --rounds 2/);

    const missed = renderResults(results([3_000, 3_200]));
    assert.equal(missed.missed.h2, true);
    assert.match(missed.markdown, /\| 0\.62x \| \*\*missed\*\* by 31% \|/);
  });
});
