// The comparison's arithmetic and rule, without services: the intervals against published values
// and a coverage check, the verdict rule as a table, and compareRuns on runs made of known
// samples (the direction of each quantity, the new-connection cost's side that moved, exact
// bytes, a load job's throughput and tail).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { RequestSample } from '../../contracts/common.js';
import type { QuantityId } from '../../contracts/quantities.js';
import { RESULT_SCHEMA, type ProbeResult, type RunReport } from '../../contracts/result.js';
import { percentileInterval, percentileRankInterval, prng, wilsonInterval } from '../../common/stats.js';
import { encodeHistogram, newLatencyHistogram, recordMs } from '../../common/latency-histogram.js';
import { compareRuns } from '../../coordinator/compare/compare-runs.js';
import { ComparisonStoppedError, compareInThread } from '../../coordinator/compare/compare-thread.js';
import { makeComparison } from '../../coordinator/compare/compare-thread-task.js';
import { BadInputError } from '../../common/bad-input.js';
import { createLogger } from '../../common/log.js';
import { tempDir } from '../helpers/temp-dir.js';
import { fewestValuesFor } from '../../coordinator/run-quantities.js';
import {
  renderComparisonHtml,
  renderComparisonMarkdown,
  renderComparisonText,
} from '../../coordinator/compare/render.js';
import { reasonText } from '../../coordinator/compare/views.js';
import {
  baselineOf,
  cpuWaitReach,
  judge,
  minChangeFor,
  minChangeRule,
  withCpuWait,
} from '../../coordinator/compare/rules.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { splitPlan } from '../../coordinator/split.js';
import { REPO_ROOT } from '../helpers/repo.js';

const close = (actual: number, expected: number, digits = 4) =>
  assert.ok(Math.abs(actual - expected) < 10 ** -digits, `${actual} ≈ ${expected}`);

describe('intervals', () => {
  test('Wilson: 0 of 10 is 0 to 27.8%; 56 of 70 is 69.2% to 87.7%', () => {
    const [lo, hi] = wilsonInterval(0, 10);
    assert.equal(lo, 0);
    close(hi, 0.2775);
    const [lo2, hi2] = wilsonInterval(56, 70);
    close(lo2, 0.6918, 3);
    close(hi2, 0.877, 3);
  });

  test('percentile ranks from the binomial: a median of 200 between the 86th and 115th, a p95 needs 72 values', () => {
    assert.deepEqual(percentileRankInterval(200, 50), [86, 115]);
    assert.deepEqual(percentileRankInterval(100, 95), [90, 100]);
    assert.equal(percentileRankInterval(71, 95), undefined);
    assert.deepEqual(percentileRankInterval(72, 95), [64, 72]);
    assert.equal(percentileRankInterval(5, 50), undefined);
    assert.deepEqual(percentileRankInterval(6, 50), [1, 6]);
    assert.equal(fewestValuesFor(95), 72);
    assert.equal(fewestValuesFor(50), 6);
    // The normal approximation takes over for large n without a jump.
    const [a, b] = [percentileRankInterval(20_000, 99)!, percentileRankInterval(20_001, 99)!];
    assert.ok(Math.abs(a[0] - b[0]) <= 3 && Math.abs(a[1] - b[1]) <= 3, `${a} vs ${b}`);
  });

  test('the percentile intervals cover the true median and p95 at least 95% of the time', () => {
    const random = prng(7);
    const trials = 2000;
    const covered = { 50: 0, 95: 0 };
    for (let t = 0; t < trials; t++) {
      // Exponential with mean 1: median ln 2, p95 ln 20.
      const sorted = Float64Array.from({ length: 120 }, () => -Math.log(1 - random())).sort();
      for (const [p, truth] of [
        [50, Math.LN2],
        [95, Math.log(20)],
      ] as const) {
        const { ci95 } = percentileInterval(sorted, p)!;
        if (ci95[0] <= truth && truth <= ci95[1]) covered[p]++;
      }
    }
    // Distribution-free and conservative: 95% or a little more (binomial noise of 2000 trials: ±1%).
    for (const p of [50, 95] as const) assert.ok(covered[p] / trials >= 0.94, `p${p}: ${covered[p] / trials}`);
  });
});

describe('the baseline rule', () => {
  const steady = [10, 10.2, 9.8, 10.1, 9.9, 10, 10.3];
  const noisy = [10, 14, 9, 13, 11, 15, 10];
  const cases: [string, QuantityId, number[], number, [number, number] | null, boolean, string][] = [
    ['inside the band', 'phase_total_p50', steady, 10.3, [10.2, 10.4], true, 'unchanged within-spread'],
    [
      "the run's own interval reaches the median",
      'phase_total_p50',
      steady,
      13,
      [9.9, 16],
      true,
      'unchanged within-spread',
    ],
    [
      'beyond the band and the minimum effect, worse',
      'phase_total_p50',
      steady,
      13,
      [12.8, 13.2],
      true,
      'regressed beyond-baseline',
    ],
    [
      'beyond the band and the minimum effect, better',
      'phase_total_p50',
      steady,
      7,
      [6.8, 7.2],
      false,
      'improved beyond-baseline',
    ],
    [
      'beyond the band, under the minimum effect (2 ms: 20% of 10 ms)',
      'phase_total_p50',
      steady,
      11.5,
      [11.4, 11.6],
      true,
      'unchanged below-minimum',
    ],
    [
      'above every earlier run, within 3 scaled MADs of a noisy history',
      'phase_total_p50',
      noisy,
      16.5,
      [16.2, 16.8],
      true,
      'unchanged within-spread',
    ],
    [
      'exact bytes: the band is the one value; 20 B and 20% counts',
      'header_bytes_h1_response',
      [100, 100, 100],
      120,
      null,
      true,
      'regressed beyond-baseline',
    ],
    [
      'exact bytes: 10 B is under the minimum (16 B)',
      'header_bytes_h1_response',
      [100, 100, 100],
      110,
      null,
      true,
      'unchanged below-minimum',
    ],
    [
      '1 earlier run: +3 ms is not enough to judge',
      'phase_total_p50',
      [10],
      13,
      [12.8, 13.2],
      true,
      'unchanged too-little-history',
    ],
    [
      '1 earlier run: +14 ms (more than doubled, over 5 ms) is beyond any noise',
      'phase_total_p50',
      [10],
      25,
      [24, 26],
      true,
      'regressed beyond-any-noise',
    ],
    [
      '2 earlier runs: halved by 5.9 ms is beyond any noise',
      'phase_total_p50',
      [10, 10.4],
      4,
      [3.9, 4.1],
      false,
      'improved beyond-any-noise',
    ],
    [
      "the issue's twin pair: 0.03 -> 2.86 ms new-connection cost after 1 run",
      'new_connection_cost',
      [0.03],
      2.86,
      [2.43, 3.35],
      true,
      'unchanged too-little-history',
    ],
    [
      "the issue's twin pair: 5.16 -> 3.70 ms after 1 run",
      'new_connection_cost',
      [5.16],
      3.7,
      [3.5, 3.86],
      false,
      'unchanged too-little-history',
    ],
    [
      'a Nagle stall after 1 run: 0.17 -> 43.9 ms',
      'phase_total_p50',
      [0.17],
      43.9,
      [43.7, 44],
      true,
      'regressed beyond-any-noise',
    ],
    [
      'keep-alive lost after 1 run: 1% -> 100% of requests open a connection',
      'connections_per_request',
      [0.01],
      1,
      [0.96, 1],
      true,
      'regressed beyond-any-noise',
    ],
  ];
  for (const [name, quantity, earlier, after, ci, worse, expected] of cases)
    test(name, () => {
      const { verdict, reason } = judge(quantity, baselineOf(earlier), after, ci, worse);
      assert.equal(`${verdict} ${reason}`, expected);
    });

  test('the band: median ± 3 scaled MADs, widened to every earlier value; none below 3 runs', () => {
    const b = baselineOf([10, 10.2, 9.8, 10.1, 9.9, 10, 10.3]);
    close(b.median, 10);
    close(b.spread, 1.4826 * 0.1);
    close(b.band![0], 10 - 3 * 1.4826 * 0.1);
    close(b.band![1], 10 + 3 * 1.4826 * 0.1);
    assert.deepEqual(baselineOf([10, 10, 10, 14]).band, [10, 14], 'one night far out widens the band to it');
    assert.equal(baselineOf([10, 11]).band, null);
  });

  test('minimum changes: a millisecond and a fifth for medians, 2 ms and 30% for tails; bytes, shares', () => {
    const table: [QuantityId, number, number][] = [
      ['phase_total_p50', 0.4, 1],
      ['phase_total_p50', 40, 8],
      ['phase_total_p95', 1, 2],
      ['phase_total_p95', 100, 30],
      ['new_connection_cost', -43, 8.6],
      ['handshake_full_p50', 30, 6],
      ['load_latency_p99', 20, 6],
      ['header_bytes_h1_response', 100, 16],
      ['encoded_bytes_gzip', 10_000, 500],
      ['error_rate', 0, 0.01],
      ['connections_per_request', 0.005, 0.1],
      ['load_throughput', 4000, 1000],
    ];
    for (const [quantity, before, expected] of table) close(minChangeFor(quantity, before), expected, 9);
  });
});

test("the worker's wait for a CPU: how far it can move a percentile, and the changes it explains", () => {
  // A p50 of 100 samples moves by d only if ~50 samples each took d longer: 500 ms of wait reach 10 ms.
  close(cpuWaitReach('phase_total_p50', 100, 500), 10);
  close(cpuWaitReach('phase_total_p95', 100, 25), 5);
  close(cpuWaitReach('handshake_full_p95', 10, 4), 4, 9);
  assert.equal(cpuWaitReach('encoded_bytes_gzip', 100, 500), 0, 'bytes are not moved by a wait');
  assert.equal(cpuWaitReach('phase_total_p50', 100, 0), 0);
  const busy = { verdict: 'unchanged', reason: 'machine-busy' } as const;
  const regressed = { verdict: 'regressed', reason: 'beyond-baseline' } as const;
  const improved = { verdict: 'improved', reason: 'beyond-baseline' } as const;
  assert.deepEqual(withCpuWait('phase_total_p50', regressed, 8.2, 10, 0), busy, "up: the new run's wait");
  assert.deepEqual(withCpuWait('phase_total_p50', regressed, 40, 10, 0), regressed, 'a Nagle stall is beyond it');
  assert.deepEqual(withCpuWait('phase_total_p50', improved, -8.2, 10, 0), improved, 'down: not the new run');
  assert.deepEqual(withCpuWait('phase_total_p50', improved, -8.2, 0, 10), busy, "down: the earlier runs' wait");
  assert.deepEqual(withCpuWait('new_connection_cost', improved, -8.2, 10, 0), busy, 'a difference: either');
  const unchanged = { verdict: 'unchanged', reason: 'within-spread' } as const;
  assert.deepEqual(withCpuWait('phase_total_p50', unchanged, 1, 10, 10), unchanged);
});

test('every verdict says why, in the words of its rule', () => {
  const row = (earlier: number[], after: number, ci95: [number, number] | null) => {
    const baseline = baselineOf(earlier);
    const change = after - baseline.median;
    return reasonText({
      ...{ region: 'local', target: 'http', probe: 'reuse', variant: {}, quantity: 'phase_total_p50' },
      ...{ baseline, after, afterCi95: ci95, n: null, change, relativeChange: change / baseline.median },
      ...{ interval: ci95 ? 'order-statistics' : 'none', minChange: minChangeFor('phase_total_p50', baseline.median) },
      ...judge('phase_total_p50', baseline, after, ci95, change > 0),
    });
  };
  const steady = [10, 10.2, 9.8, 10.1, 9.9, 10, 10.3];
  assert.equal(
    row(steady, 13, [12.8, 13.2]),
    'beyond baseline: outside its spread, and at least the minimum effect, 2.00 ms',
  );
  assert.equal(row(steady, 10.3, [10.2, 10.4]), 'within night-to-night spread');
  assert.equal(row(steady, 11.5, [11.4, 11.6]), 'below minimum effect, 2.00 ms');
  assert.equal(row([10], 13, [12.8, 13.2]), '1 earlier run: not enough to judge (only 10.0 ms or more would count)');
  assert.equal(row([10], 25, [24, 26]), 'beyond any plausible noise: 1 earlier run, but 10.0 ms or more away');
  assert.equal(row([10], 11, [9, 12]), "within the run's own noise");
  assert.equal(
    reasonText({
      ...{ region: 'local', target: 'http', probe: 'reuse', variant: {}, quantity: 'phase_total_p50' },
      ...{ baseline: baselineOf(steady), after: 13, afterCi95: [12.8, 13.2], n: 100, change: 3, relativeChange: 0.3 },
      ...{ interval: 'order-statistics', minChange: 2, verdict: 'unchanged', reason: 'machine-busy' },
    }),
    "machine busy: the worker's own wait for a CPU during the job could have made this change",
  );
});

test("docs/compare.md's walkthrough: its sed moves the example plan's http target to the Nagle path, and nothing else", async () => {
  const page = await readFile(path.join(REPO_ROOT, 'docs/compare.md'), 'utf8');
  const [, script] = /^sed '([^']+)' examples\/compare-nightly\.yaml > nagle\.yaml$/m.exec(page) ?? [];
  assert.ok(script, 'the walkthrough makes nagle.yaml with sed');
  const plan = path.join(REPO_ROOT, 'examples/compare-nightly.yaml');
  const changed = execFileSync('sed', [script!, plan], { encoding: 'utf8' }).split('\n');
  const original = (await readFile(plan, 'utf8')).split('\n');
  const differing = changed.flatMap((line, i) => (line === original[i] ? [] : [`${original[i]} -> ${line}`]));
  assert.deepEqual(differing, ['    url: lab:keepalive/ ->     url: lab:keepalive/nagle']);
});

test('docs/compare.md states the minimum changes rules.ts applies', async () => {
  const page = await readFile(path.join(REPO_ROOT, 'docs/compare.md'), 'utf8');
  const docs = page.slice(page.indexOf('## The baseline rule'), page.indexOf('## Plans that do not match'));
  const row = (start: string) =>
    docs.split('\n').find((line) => line.startsWith(`| ${start}`)) ?? `(no row "${start}")`;
  const both = (id: QuantityId, unit: string) => {
    const { absolute, relative } = minChangeRule(id);
    return `${absolute} ${unit} and ${relative * 100}% of the baseline median`;
  };
  assert.match(row('medians of time'), new RegExp(`\\| ${both('phase_total_p50', 'ms')} \\|$`));
  assert.match(row('tails of time'), new RegExp(`\\| ${both('load_latency_p99', 'ms')} \\|$`));
  assert.match(row('bytes'), new RegExp(`\\| ${both('encoded_bytes_br', 'B')} \\|$`));
  assert.match(row('error rate'), new RegExp(`\\| ${minChangeRule('error_rate').absolute * 100} percentage point`));
  assert.match(
    row('connections per request'),
    new RegExp(`\\| ${minChangeRule('connections_per_request').absolute * 100} percentage points`),
  );
  assert.match(
    row('load throughput'),
    new RegExp(`\\| ${minChangeRule('load_throughput').relative * 100}% of the baseline median \\|$`),
  );
});

/** A run of a plan whose results carry the given per-request totals (ms) per target and mode. */
async function runOf(
  runId: string,
  planText: string,
  totals: (job: { target: string; mode?: string }) => number[],
  extra: (result: ProbeResult) => ProbeResult = (r) => r,
): Promise<RunReport> {
  const loaded = await parsePlan(planText, 'plan.yaml');
  const at = new Date('2026-12-01T02:00:00Z');
  const results = splitPlan(loaded, runId).map((job) => {
    const mode = (job.variant as { mode?: string }).mode;
    const values = totals({ target: job.target.name, mode });
    const samples: RequestSample[] = values.map((total, seq) => ({
      seq,
      status: 200,
      newConnection: mode !== 'reused' || seq === 0,
      phases: { total },
      bodyBytes: 10,
    }));
    return extra({
      schema: RESULT_SCHEMA,
      jobId: job.jobId,
      runId,
      region: job.region,
      target: job.target.name,
      probe: job.probe,
      variant: job.variant,
      ok: true,
      error: null,
      startedAt: at.toISOString(),
      finishedAt: at.toISOString(),
      worker: { host: 'test', pid: 1, region: job.region },
      summary: {
        requests: values.length,
        errors: 0,
        connectionsOpened: samples.filter((s) => s.newConnection).length,
        durationMs: 1,
        phases: {},
      },
      details: { samples },
      findings: [],
      altSvc: [],
    } as ProbeResult);
  });
  return buildRunReport({ runId, mode: 'embedded', plan: loaded.plan, startedAt: at, finishedAt: at, results });
}

/** 100 values spread evenly around `centre` (±10%). */
const around = (centre: number) => Array.from({ length: 100 }, (_, i) => centre * (0.9 + (0.2 * i) / 99));

const REUSE_PLAN = `
name: synthetic
targets: [{ name: api, url: "https://127.0.0.1:9/" }]
experiments: [{ probe: reuse, requests: 100, modes: [reused, new] }]
`;

/** Three earlier runs 2% apart, newest first: enough history for a band. */
const earlierRuns = (
  planText: string,
  totals: Parameters<typeof runOf>[2],
  extra?: (result: ProbeResult) => ProbeResult,
): Promise<RunReport[]> =>
  Promise.all(
    [1, 1.02, 0.98].map((f, i) => runOf(`before-${i}`, planText, (job) => totals(job).map((v) => v * f), extra)),
  );

describe('compareRuns on known samples', () => {
  const cost = async (before: Record<string, number>, after: Record<string, number>) => {
    const c = await compareRuns(
      await earlierRuns(REUSE_PLAN, ({ mode }) => around(before[mode!])),
      await runOf('after', REUSE_PLAN, ({ mode }) => around(after[mode!])),
    );
    const row = (quantity: QuantityId, mode?: string) =>
      c.quantities.find((q) => q.quantity === quantity && q.variant.mode === mode)!;
    return { c, row };
  };

  test('the same samples as the earlier runs: every quantity unchanged, within their spread', async () => {
    const { c } = await cost({ reused: 1, new: 5 }, { reused: 1, new: 5 });
    assert.ok(c.quantities.length >= 7, `${c.quantities.length} quantities`);
    assert.equal(c.baseline.length, 3);
    for (const q of c.quantities) assert.equal(`${q.verdict} ${q.reason}`, 'unchanged within-spread', q.quantity);
    assert.deepEqual(c.differences, []);
    assert.deepEqual(c.notCompared, []);
  });

  test('new connections got cheaper: the new-connection cost fell and that is an improvement', async () => {
    const { row } = await cost({ reused: 1, new: 10 }, { reused: 1, new: 4 });
    assert.equal(row('phase_total_p50', 'new').verdict, 'improved');
    const c = row('new_connection_cost');
    assert.ok(c.change < -5, `${c.change}`);
    assert.equal(c.verdict, 'improved');
  });

  test('reused requests got slower: the cost fell too, and that is a regression', async () => {
    const { row } = await cost({ reused: 1, new: 10 }, { reused: 7, new: 10 });
    assert.equal(row('phase_total_p50', 'reused').verdict, 'regressed');
    assert.equal(row('new_connection_cost').verdict, 'regressed');
    assert.equal(row('phase_total_p50', 'new').verdict, 'unchanged');
  });

  test("a starved worker: a change its wait for a CPU explains is 'machine busy'; one it does not, still regressed", async () => {
    const waited = (ms: number) => (r: ProbeResult) => ({ ...r, worker: { ...r.worker, cpuWaitMs: ms } });
    const before = await earlierRuns(REUSE_PLAN, ({ mode }) => around(mode === 'new' ? 2 : 1));
    const slower = (reused: number) => (job: { mode?: string }) => around(job.mode === 'new' ? 2 : reused);
    // Reused requests 8 ms slower at the median, with 500 ms of wait over 100 requests: 10 ms explained.
    const starvedRun = await compareRuns(before, await runOf('after', REUSE_PLAN, slower(9), waited(500)));
    const row = (c: typeof starvedRun) =>
      c.quantities.find((q) => q.quantity === 'phase_total_p50' && q.variant.mode === 'reused')!;
    assert.equal(`${row(starvedRun).verdict} ${row(starvedRun).reason}`, 'unchanged machine-busy');
    // 40 ms slower with the same wait: beyond it.
    const stalled = await compareRuns(before, await runOf('after', REUSE_PLAN, slower(41), waited(500)));
    assert.equal(`${row(stalled).verdict} ${row(stalled).reason}`, 'regressed beyond-baseline');
    // Earlier runs that starved, and a new run that did not: the fall their wait explains is no improvement.
    const starvedBefore = await earlierRuns(REUSE_PLAN, slower(9), waited(500));
    const fine = await compareRuns(starvedBefore, await runOf('after', REUSE_PLAN, slower(1)));
    assert.equal(`${row(fine).verdict} ${row(fine).reason}`, 'unchanged machine-busy');
  });

  test('a job twice in an earlier run (a hand-merged run file) counts once: its first record', async () => {
    const before = await earlierRuns(REUSE_PLAN, ({ mode }) => around(mode === 'new' ? 2 : 1));
    const after = await runOf('after', REUSE_PLAN, ({ mode }) => around(mode === 'new' ? 2 : 5));
    const once = await compareRuns(before, after);
    // The newest earlier run again, each job followed by a copy of it that measured ten times
    // slower and waited 5 s for a CPU.
    const [newest, ...rest] = before as [RunReport, ...RunReport[]];
    const slowCopy = (r: ProbeResult) => {
      const samples = (r.details as { samples: RequestSample[] }).samples.map((x) => ({
        ...x,
        phases: { ...x.phases, total: x.phases.total! * 10 },
      }));
      return { ...r, details: { ...r.details, samples }, worker: { ...r.worker, cpuWaitMs: 5_000 } } as ProbeResult;
    };
    const twice = { ...newest, results: newest.results.flatMap((r) => [r, slowCopy(r)]) };
    assert.deepEqual(await compareRuns([twice, ...rest], after), once);
  });

  test('loopback-sized changes are not regressions: 0.4 ms to 0.8 ms is real, and under the minimum', async () => {
    const { row } = await cost({ reused: 0.4, new: 1 }, { reused: 0.8, new: 1 });
    const total = row('phase_total_p50', 'reused');
    assert.ok(total.afterCi95![0] > total.baseline.band![1], 'outside the spread');
    assert.equal(`${total.verdict} ${total.reason}`, 'unchanged below-minimum');
  });

  test('a connection per request where one was reused: connections per request regressed (share, Wilson)', async () => {
    const plan = REUSE_PLAN.replace('modes: [reused, new]', 'modes: [reused]');
    const closing = (r: ProbeResult): ProbeResult => ({ ...r, summary: { ...r.summary, connectionsOpened: 100 } });
    const c = await compareRuns(
      await earlierRuns(plan, () => around(1)),
      await runOf('after', plan, () => around(1), closing),
    );
    const q = c.quantities.find((x) => x.quantity === 'connections_per_request')!;
    assert.equal(q.interval, 'wilson');
    assert.equal(q.verdict, 'regressed');
    assert.ok(Math.abs(q.change - 0.99) < 1e-9);
  });

  test('exact bytes and a load job: header bytes by the minimum alone; throughput down 40% regressed; p99 from histograms', async () => {
    const plan = `
name: synthetic
targets: [{ name: api, url: "http://127.0.0.1:9/" }]
experiments:
  - { probe: http2 }
  - { probe: load, durationSeconds: 1 }
`;
    const histogram = (ms: number) => {
      const h = newLatencyHistogram();
      for (let i = 0; i < 5000; i++) recordMs(h, ms * (0.5 + i / 5000));
      return encodeHistogram(h);
    };
    const details = (responseBytes: number, rps: number, latency: number) => (r: ProbeResult) =>
      ({
        ...r,
        details:
          r.probe === 'http2'
            ? {
                alpn: null,
                h1HeaderBytes: { request: 80, response: responseBytes },
                h2HeaderBytesFirst: null,
                h2HeaderBytesRepeat: null,
                h2Requests: [],
                h2cPriorKnowledge: null,
                h2cUpgrade: null,
                multiplexing: { requests: 1, h1: null, h2: null },
                errors: [],
              }
            : {
                loop: 'closed',
                mode: 'reused',
                connections: 10,
                concurrency: 10,
                completed: 5000,
                errors: {},
                statuses: { '2xx': 5000 },
                connectionsOpened: 10,
                protocols: { 'http/1.1': 10 },
                requestsPerSecond: rps,
                bodyBytes: 0,
                stoppedBy: 'duration',
                latencyMs: {
                  p50: latency,
                  p90: latency,
                  p99: latency,
                  p999: latency,
                  max: latency,
                  mean: latency,
                  n: 5000,
                },
                latencyHistogram: histogram(latency),
              },
      }) as ProbeResult;
    const c = await compareRuns(
      await earlierRuns(plan, () => [], details(150, 5000, 2)),
      await runOf('after', plan, () => [], details(158, 3000, 20)),
    );
    const q = (id: QuantityId) => c.quantities.find((x) => x.quantity === id)!;
    assert.equal(`${q('header_bytes_h1_request').verdict} ${q('header_bytes_h1_request').interval}`, 'unchanged none');
    assert.equal(
      `${q('header_bytes_h1_response').verdict} ${q('header_bytes_h1_response').reason}`,
      'unchanged below-minimum',
    );
    assert.equal(q('load_throughput').verdict, 'regressed');
    assert.equal(q('load_throughput').afterCi95, null);
    assert.equal(`${q('load_latency_p99').verdict} ${q('load_latency_p99').interval}`, 'regressed order-statistics');
    close(q('load_latency_p99').baseline.median, 2 * (0.5 + 0.99), 1);
  });

  test('a job without a result in one run is named, with why, and not compared', async () => {
    const before = await earlierRuns(REUSE_PLAN, () => around(1));
    const after = await runOf('after', REUSE_PLAN, () => around(1));
    const lost = after.results.find((r) => r.probe === 'reuse' && r.variant.mode === 'new')!;
    after.results = after.results.filter((r) => r !== lost);
    after.unfinishedJobs = [
      {
        jobId: lost.jobId,
        region: lost.region,
        target: lost.target,
        probe: 'reuse',
        variant: lost.variant,
        status: 'not-run',
        reason: 'no worker of region "local" took it',
      },
    ];
    const c = await compareRuns(before, after);
    assert.deepEqual(
      c.notCompared.map((n) => [n.variant.mode, n.quantity, n.reason]),
      [['new', undefined, 'after: not run: no worker of region "local" took it']],
    );
    assert.ok(c.quantities.every((q) => q.variant.mode !== 'new'));
    assert.equal(c.quantities.filter((q) => q.quantity === 'new_connection_cost').length, 0);
  });

  test('a run over the jobs listed whole lists what changed and the first not compared; the verdicts count all', async () => {
    const extra = Array.from({ length: 60 }, (_, i) => `{ name: x${i}, url: "https://127.0.0.1:9/x" }`);
    const regions = Array.from({ length: 20 }, (_, i) => `r${i}`).join(', ');
    const plan = (targets: string[]) => `
name: synthetic
regions: [${regions}]
targets: [{ name: api, url: "https://127.0.0.1:9/" }, { name: b, url: "https://127.0.0.1:9/b" }, ${targets.join(', ')}]
experiments: [{ probe: reuse, requests: 100, modes: [reused, new] }]
`;
    const before = await earlierRuns(plan([]).replace(', ]', ']'), ({ mode }) => around(mode === 'new' ? 5 : 1));
    // Target b's new connections 3 times slower; 60 targets (2,400 jobs) the earlier runs lack:
    // past twice the 1,000 not-compared entries listed, so some are dropped while they are read.
    // (One request each on the targets only the new run has: what they measured does not matter.)
    const after = await runOf('after', plan(extra), ({ target, mode }) =>
      target.startsWith('x') ? [1] : around(mode === 'new' ? (target === 'b' ? 15 : 5) : 1),
    );
    const jobs = after.results.length;
    const whole = await compareRuns(before, after);
    const listed = await compareRuns(before, after, undefined, jobs - 1);
    assert.deepEqual(listed.summary, whole.summary);
    assert.ok(whole.summary.regressed >= 2 && whole.summary.unchanged > 0, JSON.stringify(whole.summary));
    assert.deepEqual(
      listed.quantities,
      whole.quantities.filter((q) => q.verdict !== 'unchanged'),
    );
    assert.ok(listed.quantities.some((q) => q.quantity === 'new_connection_cost' && q.afterCi95 !== null));
    assert.equal(whole.notCompared.length, 2_400);
    assert.deepEqual(listed.notCompared, whole.notCompared.slice(0, 1_000));
    assert.deepEqual(listed.omitted, { unchanged: whole.summary.unchanged, changed: 0, notCompared: 1_400 });
    assert.deepEqual(whole.omitted, { unchanged: 0, changed: 0, notCompared: 0 });
    assert.deepEqual(listed.differences, whole.differences);
    assert.match(
      renderComparisonText(listed),
      new RegExp(
        `not listed: ${whole.summary.unchanged} unchanged quantities; 1,400 not compared past the first 1,000`,
      ),
    );
  });

  test('strings from the runs stay text in HTML and Markdown', async () => {
    const hostile = '</td><script>alert(1)</script><img src=x onerror=alert(2)> | *x* [y](http://127.0.0.1:9/)';
    const c = await compareRuns(
      await earlierRuns(REUSE_PLAN, () => around(1)),
      await runOf('after', REUSE_PLAN, () => around(1)),
    );
    c.differences.push({ kind: 'target-url', where: 'api', before: hostile, after: hostile });
    const page = renderComparisonHtml(c);
    assert.doesNotMatch(page, /<script|<img/);
    assert.ok(page.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    const markdown = renderComparisonMarkdown(c);
    assert.doesNotMatch(markdown, /<script|<img|(?<!\\)\]\(http/);
  });
});

describe('a comparison in a thread of its own (compare-thread.ts)', () => {
  /** Three earlier runs and a new one whose reused requests got slower, written as run files. */
  async function runFiles(): Promise<string[]> {
    const dir = tempDir('probefleet-compare-thread-');
    const runs = [
      ...(await earlierRuns(REUSE_PLAN, () => around(10))),
      await runOf('after', REUSE_PLAN, (job) => around(job.mode === 'reused' ? 30 : 10)),
    ];
    return Promise.all(
      runs.map(async (run) => {
        const file = path.join(dir, `${run.runId}.json`);
        await writeFile(file, JSON.stringify(run));
        return file;
      }),
    );
  }
  const logLevel = 'silent';

  test('makes from run files what the same request makes in this thread', async () => {
    const request = { files: await runFiles() };
    const made = await compareInThread(request, { logLevel });
    assert.deepEqual(made, await makeComparison(request, createLogger('test', logLevel)));
    assert.ok('summary' in made && made.summary.regressed > 0, JSON.stringify(made).slice(0, 300));
  });

  test('a run file that is not there is bad input, as the CLI says it (exit 2)', async () => {
    const [first] = await runFiles();
    const missing = `${first}.gone`;
    await assert.rejects(compareInThread({ files: [first!, missing] }, { logLevel }), (err: Error) => {
      assert.ok(err instanceof BadInputError, `${err.name}: ${err.message}`);
      assert.ok(err.message.includes(missing), err.message);
      return true;
    });
  });

  test('stopped by its signal: ComparisonStoppedError, and the thread ends (else this file would not)', async () => {
    const stop = new AbortController();
    const making = compareInThread({ files: await runFiles() }, { logLevel, signal: stop.signal });
    stop.abort();
    await assert.rejects(making, ComparisonStoppedError);
  });

  test('a thread that outgrows its heap fails with an error naming the bound; this one lives on', async () => {
    // 8 MB: less than the comparison's modules take (12–16 MB), more than V8 needs to start the
    // thread at all (under Node 24, a 2 MB heap fails in V8's start and ends the whole process).
    await assert.rejects(compareInThread({ files: await runFiles() }, { logLevel, heapMb: 8 }), (err: Error) => {
      assert.match(err.message, /needs more than its thread's 8 MB of heap/);
      return true;
    });
  });
});
