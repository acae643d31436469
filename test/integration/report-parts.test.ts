// A run report stored in parts on a real Redis: its head and its results in pages, read back whole
// or a page at a time; two finishers of one run, the first stored wins and the other's pages go;
// a draft that lost pages and a full Redis store nothing; `runs show` of a run too big to show
// whole; a report an earlier version stored whole still reads.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { reportKeys } from '../../contracts/queues.js';
import { LISTED_EVERY_QUANTITY_UP_TO_JOBS, type RunComparison } from '../../contracts/comparison.js';
import { headOf, type ProbeResult, type RunReport } from '../../contracts/result.js';
import { EXIT_REGRESSED } from '../../cli/exit-codes.js';
import { createLogger } from '../../common/log.js';
import { redisOptions } from '../../common/redis.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { ReportPagesLostError, RESULTS_PER_PAGE } from '../../coordinator/report-store.js';
import { RedisFullError } from '../../common/redis-errors.js';
import { WHOLE_REPORT_RESULTS } from '../../coordinator/run-parts.js';
import { printableJsonText } from '../../common/printable.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { compareWithBaseline } from '../../coordinator/compare/with-baseline.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { deletePrefix, needsRedis, startOwnRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';
import { captureLog } from '../helpers/logs.js';
import { probeResult, requestSample } from '../helpers/results.js';

const log = createLogger('test', 'silent');
/** More than two pages, the last one short. */
const RESULTS = 2 * RESULTS_PER_PAGE + 37;

/** A run of `count` jobs over seven targets in two regions, each with `requests` answered requests;
 * `slower` picks the jobs whose requests take four times as long. */
async function reportOfSize(
  runId: string,
  count: number,
  planName = 'parts',
  startedAt = '2026-12-04T00:00:00.000Z',
  slower: (job: { region: string; target: string }) => boolean = () => false,
  requests = 1,
) {
  const { plan } = await parsePlan(
    `name: ${planName}\nregions: [calm, lossy]\ntargets:\n  - { name: t0, url: "http://127.0.0.1:1/" }\nexperiments:\n  - { probe: reuse }\n`,
    'parts.yaml',
  );
  const results: ProbeResult[] = Array.from({ length: count }, (_, i) => {
    const [region, target] = [i % 2 ? 'lossy' : 'calm', `t${i % 7}`];
    const factor = slower({ region, target }) ? 4 : 1;
    return probeResult({
      jobId: `${runId}.${region}.${target}.reuse-new-${String(i).padStart(10, '0')}`,
      runId,
      // Every failure (every 50th) is in calm: the summary's notable results name one region only.
      region,
      target,
      probe: 'reuse',
      variant: { mode: i % 2 ? 'new' : 'reused', scheme: 'http' },
      ok: i % 50 !== 0,
      error: i % 50 !== 0 ? null : { code: 'RESPONSE_TIMEOUT', message: `job ${i} timed out` },
      details: {
        samples: Array.from({ length: requests }, (_, seq) =>
          requestSample(seq, { connect: 1, total: factor * (2 + (i % 5) + seq) }),
        ),
      },
    });
  });
  const at = new Date(startedAt);
  return buildRunReport({ runId, mode: 'distributed', plan, startedAt: at, finishedAt: at, results });
}

describe('a run report stored in parts', needsRedis, () => {
  const prefix = testPrefix();
  let fleet: Fleet;
  let client: Redis;

  before(() => {
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    client = new Redis(redisOptions({ url: TEST_REDIS_URL }));
  });
  after(async () => {
    await fleet?.close();
    client?.disconnect();
    await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('stored as a head and pages, it reads back whole and page by page', async () => {
    const report = await reportOfSize('parts-whole', RESULTS);
    const draft = fleet.store.draft(report.runId);
    // As a finisher writes it: a group at a time.
    for (let i = 0; i < RESULTS; i += 300) await draft.add(report.results.slice(i, i + 300));
    assert.deepEqual(await fleet.store.saveIfAbsent(headOf(report), draft), { stored: true });

    const pages = await client.llen(reportKeys.reportResults(prefix, report.runId));
    assert.ok(pages >= Math.ceil(RESULTS / RESULTS_PER_PAGE), `${pages} pages`);
    assert.equal(await client.exists(draft.key), 0, 'the draft became the results list');
    const head = await fleet.store.getHead(report.runId);
    assert.equal(head?.resultCount, RESULTS);
    assert.equal(head?.okCount, report.results.filter((r) => r.ok).length);
    assert.ok(head!.notableResults.every((r) => r.error));
    assert.deepEqual(await fleet.store.get(report.runId), report);
    let read = 0;
    for await (const page of fleet.store.results(report.runId)) {
      assert.ok(page.length <= RESULTS_PER_PAGE);
      read += page.length;
    }
    assert.equal(read, RESULTS);
    const [summary] = await fleet.store.list(1);
    assert.deepEqual(
      [summary?.runId, summary?.jobs, summary?.errors],
      [report.runId, RESULTS, head!.resultCount - head!.okCount],
    );
  });

  test("two finishers of one run: the first stored wins, the other one's pages are dropped", async () => {
    const report = await reportOfSize('parts-twice', 40);
    const first = fleet.store.draft(report.runId);
    const second = fleet.store.draft(report.runId);
    await first.add(report.results);
    await second.add(report.results.slice(0, 10));
    assert.deepEqual(await fleet.store.saveIfAbsent(headOf(report), first), { stored: true });
    assert.deepEqual(await fleet.store.saveIfAbsent({ ...headOf(report), findings: [] }, second), { stored: false });
    assert.equal(await client.exists(second.key), 0);
    assert.deepEqual(await fleet.store.get(report.runId), report);
  });

  test('a run without results: a head and no pages', async () => {
    const report = await reportOfSize('parts-empty', 0);
    assert.deepEqual(await fleet.store.saveIfAbsent(headOf(report), fleet.store.draft(report.runId)), { stored: true });
    assert.equal(await client.exists(reportKeys.reportResults(prefix, report.runId)), 0);
    assert.deepEqual(await fleet.store.get(report.runId), report);
  });

  test('runs show of a run too big to show whole: the summary, and --json with every result as a whole report writes it', async () => {
    const report = await reportOfSize('parts-big', WHOLE_REPORT_RESULTS + 1);
    const draft = fleet.store.draft(report.runId);
    await draft.add(report.results);
    await fleet.store.saveIfAbsent(headOf(report), draft);
    const where = ['--redis', TEST_REDIS_URL, '--prefix', prefix];

    const shown = await runCli(['runs', 'show', report.runId, ...where]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^run parts-big \(distributed\), plan parts, 10,001 jobs/);
    assert.match(shown.stdout, /10,001 results: the sections with a row per job are left out/);
    assert.match(
      shown.stdout,
      /\(the first 100 results with an error or a lost worker; the run JSON holds every one\)/,
    );

    const json = await runCli(['runs', 'show', report.runId, '--json', ...where]);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(json.stdout, `${printableJsonText(report, 2)}\n`);

    // HTML and Markdown show what the head holds, as the text does; the jobs counted over the pages.
    const dir = tempDir('probefleet-parts-pages-');
    const [page, markdown] = [path.join(dir, 'run.html'), path.join(dir, 'run.md')];
    const files = await runCli(['runs', 'show', report.runId, '--html', page, '--markdown', markdown, ...where]);
    assert.equal(files.code, 0, files.stderr);
    const [htmlText, markdownText] = await Promise.all([readFile(page, 'utf8'), readFile(markdown, 'utf8')]);
    const failed = report.results.filter((r) => r.error).length;
    for (const text of [htmlText, markdownText]) {
      assert.match(text, /10,001 results: the sections with a row per job are left out of a run this big/);
      assert.ok(text.includes(`${failed} of 10,001 jobs failed: ${failed} RESPONSE_TIMEOUT`), text.slice(0, 1500));
      assert.match(text, /the first 100 results with an error or a lost worker; the run JSON holds every one/);
    }
    assert.doesNotMatch(markdownText, /^## Connection reuse/m, 'no section with a row per job');
    assert.match(
      markdownText,
      /^- \*\*regions\*\*: calm, lossy$/m,
      "the plan's regions, not those of the notable results",
    );
    assert.equal((markdownText.match(/RESPONSE_TIMEOUT: job \d+ timed out/g) ?? []).length, 100);
  });

  test('a stored run too big to list whole is compared with its baseline in parts: what changed listed, the rest counted', async () => {
    const jobs = LISTED_EVERY_QUANTITY_UP_TO_JOBS + 1;
    // Two earlier runs and a new one of plan "compared", a day apart, six requests a job; in the new
    // one, target t3 answers 4 times slower from region calm (beyond any noise: with two earlier
    // runs, only a change that big is a verdict).
    const runs: RunReport[] = [];
    for (const day of [1, 2, 3]) {
      const slower =
        day === 3 ? (j: { region: string; target: string }) => j.region === 'calm' && j.target === 't3' : () => false;
      const report = await reportOfSize(
        `compared-${day}`,
        jobs,
        'compared',
        `2026-12-0${day}T00:00:00.000Z`,
        slower,
        6,
      );
      const draft = fleet.store.draft(report.runId);
      await draft.add(report.results);
      await fleet.store.saveIfAbsent(headOf(report), draft);
      runs.push(report);
    }
    const head = (await fleet.store.getHead('compared-3'))!;
    // The plan's first run starts no thread: a signal already stopped stops nothing, and the log says why.
    const first = captureLog('info');
    const stopped = AbortSignal.abort();
    const firstHead = (await fleet.store.getHead('compared-1'))!;
    assert.equal(await compareWithBaseline(fleet, firstHead, { log: first.log, signal: stopped }), undefined);
    assert.match(
      first.text(),
      /"runId":"compared-1".*is the first stored run of plan compared: nothing to compare with/,
    );
    assert.doesNotMatch(first.text(), /was stopped/);
    // Stopped (the coordinator closing): nothing stored, and its log says how to make it later.
    const stopping = new AbortController();
    const captured = captureLog('warn');
    const making = compareWithBaseline(fleet, head, { log: captured.log, signal: stopping.signal });
    stopping.abort();
    assert.equal(await making, undefined);
    assert.equal(await fleet.store.getComparison('compared-3'), undefined);
    assert.match(captured.text(), /was stopped .*probefleet compare --previous compared-3 makes it/);
    // A thread that runs out of heap: logged as an error naming the bound; nothing stored, nothing thrown.
    const outOfHeap = captureLog('warn');
    assert.equal(await compareWithBaseline(fleet, head, { log: outOfHeap.log, heapMb: 8 }), undefined);
    assert.match(outOfHeap.text(), /needs more than its thread's 8 MB of heap \(--comparison-heap-mb raises it\)/);
    assert.equal(await fleet.store.getComparison('compared-3'), undefined);

    const stored = (await compareWithBaseline(fleet, head, { log }))!;
    assert.deepEqual(
      stored.baseline.map((r) => r.runId),
      ['compared-2', 'compared-1'],
    );
    assert.ok(stored.summary.regressed > 0 && stored.summary.unchanged > jobs, JSON.stringify(stored.summary));
    assert.equal(stored.quantities.length, stored.summary.regressed + stored.summary.improved);
    assert.ok(
      stored.quantities.every((q) => q.verdict === 'regressed' && q.region === 'calm' && q.target === 't3'),
      JSON.stringify(stored.quantities.slice(0, 3)),
    );
    assert.equal(stored.omitted.unchanged, stored.summary.unchanged);
    assert.deepEqual(await fleet.store.getComparison('compared-3'), stored);

    // The CLI reads the stored comparison, and makes the same from the stored runs named, or from the files.
    const where = ['--redis', TEST_REDIS_URL, '--prefix', prefix];
    const previous = await runCli(['compare', '--previous', 'compared-3', '--json', '-', ...where]);
    assert.equal(previous.code, 0, previous.stderr);
    assert.deepEqual(JSON.parse(previous.stdout), stored);
    const named = await runCli(['compare', 'compared-1', 'compared-2', 'compared-3', '--json', '-', ...where]);
    assert.equal(named.code, 0, named.stderr);
    assert.deepEqual(JSON.parse(named.stdout), stored);
    const dir = await tempDir('compared');
    const files = await Promise.all(
      runs.map(async (run) => {
        const file = path.join(dir, `${run.runId}.json`);
        await writeFile(file, JSON.stringify(run));
        return file;
      }),
    );
    const fromFiles = await runCli(['compare', ...files, '--json', '-', '--fail-on', 'regression']);
    assert.equal(fromFiles.code, EXIT_REGRESSED, fromFiles.stderr);
    const comparison = JSON.parse(fromFiles.stdout) as RunComparison;
    assert.deepEqual(comparison.quantities, stored.quantities);
    assert.deepEqual(comparison.summary, stored.summary);
  });

  test("the finishing lease: one holder at a time; once it ran out, its old holder can neither renew nor drop the new one's", async () => {
    // Long enough that a busy machine cannot let it run out between the first three calls.
    const first = (await fleet.store.takeFinishing('lease-run', 3_000))!;
    assert.ok(first, 'free: taken');
    assert.equal(await fleet.store.takeFinishing('lease-run', 3_000), undefined, 'held: not taken');
    assert.equal(await first.renew(), true);
    await sleep(3_500);
    const second = (await fleet.store.takeFinishing('lease-run', 60_000))!;
    assert.ok(second, 'ran out: taken by another');
    assert.equal(await first.renew(), false, 'its old holder learns it lost it');
    await first.release();
    assert.equal(await fleet.store.takeFinishing('lease-run', 300), undefined, "the old holder's release left it");
    await second.release();
    assert.ok(await fleet.store.takeFinishing('lease-run', 300), 'given up: free again');
  });

  test('a draft that lost pages (expired, or a failover) is not stored: the report is built again', async () => {
    const report = await reportOfSize('parts-lost', 3 * RESULTS_PER_PAGE);
    const draft = fleet.store.draft(report.runId);
    await draft.add(report.results.slice(0, 2 * RESULTS_PER_PAGE));
    await client.del(draft.key);
    await draft.add(report.results.slice(2 * RESULTS_PER_PAGE));
    await assert.rejects(fleet.store.saveIfAbsent(headOf(report), draft), ReportPagesLostError);
    assert.equal(await fleet.store.getHead(report.runId), undefined);
  });

  test('a report Redis is too full to store: nothing stored or listed; with room, the same call stores and lists it', async () => {
    const own = await startOwnRedis({ persistence: 'none' });
    const fullFleet = openFleet({ redis: { url: own.url }, prefix, log });
    const ownClient = new Redis(redisOptions({ url: own.url }));
    try {
      const report = await reportOfSize('parts-full', 40);
      const draft = fullFleet.store.draft(report.runId);
      await draft.add(report.results);
      const used = Number(/used_memory:(\d+)/.exec(await ownClient.info('memory'))![1]);
      // Well below what Redis holds: a margin of a few KB is gone once INFO's own reply is sent.
      await ownClient.config('SET', 'maxmemory', String(Math.floor(used / 2)));
      await assert.rejects(fullFleet.store.saveIfAbsent(headOf(report), draft), RedisFullError);
      await ownClient.config('SET', 'maxmemory', '0');
      assert.equal(await fullFleet.store.getHead(report.runId), undefined, 'no head');
      assert.deepEqual(await fullFleet.store.list(5), [], 'nothing listed');
      assert.equal(await ownClient.llen(draft.key), 1, 'the draft is as it was');
      assert.deepEqual(await fullFleet.store.saveIfAbsent(headOf(report), draft), { stored: true });
      assert.deepEqual(
        (await fullFleet.store.list(5)).map((r) => r.runId),
        [report.runId],
      );
      assert.deepEqual(await fullFleet.store.get(report.runId), report);
    } finally {
      await fullFleet.close();
      ownClient.disconnect();
      await own.stop();
    }
  });

  test('a report an earlier version stored whole reads as before', async () => {
    const report = await reportOfSize('parts-earlier', 12);
    await client.set(reportKeys.report(prefix, report.runId), JSON.stringify(report), 'EX', 60);
    assert.deepEqual(await fleet.store.get(report.runId), report);
    assert.equal((await fleet.store.getHead(report.runId))?.resultCount, 12);
  });
});
