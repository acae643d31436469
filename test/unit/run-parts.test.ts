// A finished run shown from its parts (coordinator/run-parts.ts): the run JSON and CSV written a
// page at a time are byte for byte the whole report's, its outcome and last-run metrics made over
// pages are the whole one's, and a big run's text report is its head's summary.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printableJsonText } from '../../common/printable.js';
import { headOf, type ProbeResult, type RunReport } from '../../contracts/result.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { csvText, renderCsvReport } from '../../coordinator/report/csv.js';
import { renderRunReport, renderRunSummary } from '../../coordinator/report/text.js';
import { runOutcome } from '../../coordinator/run-outcome.js';
import { outcomeOfParts, partsOf, type RunParts, runJsonText, wholeReport } from '../../coordinator/run-parts.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { type RegionRunMetrics, runMetricsOf, runMetricsOfPages } from '../../metrics/run-metrics.js';
import { probeResult, requestSample } from '../helpers/results.js';

async function report(count: number): Promise<RunReport> {
  const { plan } = await parsePlan(
    'name: parts\ntargets:\n  - { name: t0, url: "http://127.0.0.1:1/" }\nexperiments:\n  - { probe: reuse }\n',
    'parts.yaml',
  );
  const results: ProbeResult[] = Array.from({ length: count }, (_, i) =>
    probeResult({
      jobId: `parts.local.t${i % 3}.reuse-new-${String(i).padStart(10, '0')}`,
      runId: 'parts',
      target: `t${i % 3}`,
      region: i % 5 === 0 ? 'far' : 'lossy',
      probe: 'reuse',
      variant: { mode: i % 2 ? 'new' : 'reused', scheme: 'http' },
      ok: i % 4 !== 0,
      // A server's text with a control character in it: escaped in every piece as in the whole.
      error: i % 4 !== 0 ? null : { code: 'CONNECTION_RESET', message: `reset \x1b[31m${i}\u202e` },
      details: { samples: [requestSample(0, { connect: 1, total: 2 + (i % 5) })] },
    }),
  );
  const at = new Date('2026-12-04T00:00:00.000Z');
  return buildRunReport({ runId: 'parts', mode: 'distributed', plan, startedAt: at, finishedAt: at, results });
}

/** The report's parts with its results in pages of `size`, as the store reads them. */
function inPages(whole: RunReport, size: number): RunParts {
  return {
    head: headOf(whole),
    async *pages() {
      for (let i = 0; i < whole.results.length; i += size) yield whole.results.slice(i, i + size);
    },
  };
}

async function text(pieces: AsyncIterable<string>): Promise<string> {
  let all = '';
  for await (const piece of pieces) all += piece;
  return all;
}

test("the run JSON written a page at a time is the whole report's, byte for byte", async () => {
  for (const count of [0, 1, 2, 7, 40]) {
    const whole = await report(count);
    const expected = `${printableJsonText(whole, 2)}\n`;
    assert.equal(await text(runJsonText(partsOf(whole))), expected, `${count} results, one page`);
    for (const size of [1, 3, 16])
      assert.equal(await text(runJsonText(inPages(whole, size))), expected, `${count} in pages of ${size}`);
    assert.deepEqual(await wholeReport(inPages(whole, 3)), whole);
  }
});

test("the outcome counted over pages is the whole report's", async () => {
  const whole = await report(40);
  assert.deepEqual(await outcomeOfParts(inPages(whole, 7)), runOutcome(whole));
  assert.equal(runOutcome(whole).failed, 10);
});

test("a big run's text report is its head's: counts, costs and the first failures, no row per job", async () => {
  const whole = await report(40);
  const summary = renderRunSummary(headOf(whole));
  assert.match(summary, /^run parts \(distributed\), plan parts, 40 jobs/);
  assert.match(summary, /40 results: the sections with a row per job are left out of a run this big/);
  assert.match(summary, /Jobs that did not finish cleanly\n( {2}.* CONNECTION_RESET reset .*\n){10}/);
  // The whole report's per-job section (the reuse probe's table) is not in the summary.
  const perJob = renderRunReport(whole)
    .split('\n')
    .find((line) => /^\s*region\s+target/.test(line));
  assert.ok(perJob, 'the whole report has a per-job table');
  assert.ok(!summary.includes(perJob), summary);
});

test("the last-run metrics made a page at a time are the whole report's", async () => {
  const whole = await report(40);
  const exposition = async (groups: RegionRunMetrics[]) =>
    Promise.all(groups.map(async (g) => [g.plan, g.region, await g.registry.metrics()]));
  const fromWhole = await exposition(runMetricsOf(whole));
  assert.deepEqual(
    fromWhole.map(([, region]) => region),
    ['far', 'lossy'],
  );
  assert.deepEqual(await exposition(await runMetricsOfPages(inPages(whole, 3))), fromWhole);
});

test("the CSV written a page at a time is the whole report's", async () => {
  for (const count of [0, 7, 40]) {
    const whole = await report(count);
    assert.equal(await text(csvText(inPages(whole, 3))), renderCsvReport(whole), `${count} results`);
  }
});
