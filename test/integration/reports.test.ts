// Reports people look at: the example plans run for real against a lab (counts lowered), a
// two-region run, and a run with hostile values. Each run's JSON is read back as `probefleet
// report` reads it and rendered; the command itself is checked on one run, on bad files, and
// after `run --html ...`. The Markdown and CSV are read back and checked against the JSON; the
// HTML is opened in headless Chromium: no console errors, no network requests, each chart with
// its bars and labels, light and dark. Screenshots and the HTML and JSON of every run land in
// test-artifacts/reports/ (git-ignored).
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { createLogger } from '../../common/log.js';
import { PHASES } from '../../contracts/common.js';
import { headOf, runReportSchema, type ProbeResult, type ResultOf, type RunReport } from '../../contracts/result.js';
import { CSV_COLUMNS, renderCsvReport } from '../../coordinator/report/csv.js';
import { formatCount, formatMs } from '../../coordinator/report/format.js';
import { renderHtmlReport } from '../../coordinator/report/html.js';
import { renderMarkdownReport } from '../../coordinator/report/markdown.js';
import { readRunFileParts, RunFileError } from '../../coordinator/report/run-file.js';
import { wholeReport } from '../../coordinator/run-parts.js';
import { renderRunReport, renderRunSummary } from '../../coordinator/report/text.js';
import { startLab, type Lab } from '../../lab/index.js';
import { needsChromium, openBrowser, requireChromium, type Browser } from '../helpers/chromium.js';
import { runExamplePlan, runPlanText } from '../helpers/example-runs.js';
import { writePlan } from '../helpers/plans.js';
import { REPO_ROOT, runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'reports');

/** Each example plan, with its counts lowered so the whole set runs in seconds. */
const EXAMPLES: Record<string, Record<string, number>> = {
  'lecture-keepalive': { requests: 20 },
  'lecture-http2': { repeats: 3, concurrent: 12 },
  'tls-handshakes': { samples: 5 },
  'lecture-compression-cors': { repetitions: 1 },
  'go-drain': { requests: 20 },
};

/** What a hostile target could make a report say: markup, a script, a fetch, a formula. */
const HOSTILE = `</style><script>alert(1)</script><img src="http://127.0.0.1:9/x.png" onerror="alert(2)"> | *x* [y](http://127.0.0.1:9/) & done`;
const FORMULA = '=HYPERLINK("http://127.0.0.1:9/","click")';

let lab: Lab;
let dir: string;
const runs = new Map<string, RunReport>();

function twoRegionPlan(lab: Lab): string {
  return `
name: two-regions
description: New-connection cost and TLS handshakes from two regions
regions: [eu-west, ap-south]
targets:
  - name: http
    url: http://127.0.0.1:${lab.servers.keepalive.port}/
  - name: https
    url: https://127.0.0.1:${lab.servers.https.port}/
    tls: { insecure: true }
experiments:
  - probe: reuse
    requests: 12
    modes: [reused, new]
  - probe: tls
    targets: [https]
    samples: 4
    versions: ["1.2", "1.3"]
`;
}

/** A real run with hostile strings put where a server's words end up, and a job without a result; still a valid run JSON. */
function hostileReport(base: RunReport): RunReport {
  const report = structuredClone(base) as RunReport;
  report.mode = 'distributed';
  report.plan.description = HOSTILE;
  report.plan.targets[0].url = `${report.plan.targets[0].url}?q=${HOSTILE}`;
  report.findings[0].evidence = HOSTILE;
  report.decisions[0].situation = HOSTILE;
  report.decisions[0].evidence = HOSTILE;
  const cors = report.results.find((r): r is ResultOf<'cors'> & ProbeResult => r.probe === 'cors')!;
  cors.details!.origins[0].preflight.allowOrigin = HOSTILE;
  cors.details!.origins[0].get.vary = HOSTILE;
  const compression = report.results.find(
    (r): r is ResultOf<'compression'> & ProbeResult => r.probe === 'compression',
  )!;
  compression.details!.encodings[0].contentType = HOSTILE;
  compression.details!.linkModel[0].recommendation = HOSTILE;
  compression.ok = false;
  compression.error = { code: 'HTTP_PROTOCOL_ERROR', message: `${FORMULA} ${HOSTILE}` };
  const { jobId, region, target, probe, variant } = cors;
  report.unfinishedJobs = [{ jobId: `${jobId}-x`, region, target, probe, variant, status: 'failed', reason: HOSTILE }];
  return runReportSchema.parse(report) as RunReport;
}

before(async () => {
  lab = await startLab({ log });
  dir = tempDir('probefleet-reports-');
  for (const [name, caps] of Object.entries(EXAMPLES))
    runs.set(name, await runExamplePlan(lab, `${name}.yaml`, { runId: `${name}-run`, caps }));
  runs.set('two-regions', await runPlanText(twoRegionPlan(lab), 'two-regions.yaml', { runId: 'two-regions-run' }));
  runs.set('hostile', hostileReport(runs.get('lecture-compression-cors')!));
  for (const [name, report] of runs)
    await writeFile(path.join(dir, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
});

after(async () => {
  await lab?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const readRunFile = async (file: string) => wholeReport(await readRunFileParts(file));

const made = new Map<string, Promise<{ html: string; markdown: string; csv: string }>>();

/** A saved run read back with `readRunFileParts` (as `probefleet report` reads it) in each format; the first test shows the command writes the same. */
function formatsOf(name: string): Promise<{ html: string; markdown: string; csv: string }> {
  if (!made.has(name)) {
    made.set(
      name,
      readRunFile(path.join(dir, `${name}.json`)).then((report: RunReport) => ({
        html: renderHtmlReport(report),
        markdown: renderMarkdownReport(report),
        csv: renderCsvReport(report),
      })),
    );
  }
  return made.get(name)!;
}

// --- reading the formats back ---------------------------------------------------------------

/** A Markdown cell as the text it renders. */
const unescapeMarkdown = (cell: string) =>
  cell
    .replace(/\\([\\`*_[\]|~#+=.-])/g, '$1')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The rows (header and rule left out) of the first table after the line that starts with `heading`. */
function markdownTable(markdown: string, heading: string): string[][] {
  const lines = markdown.split('\n');
  const at = lines.findIndex((l) => l.startsWith(heading));
  assert.ok(at >= 0, `no "${heading}" in the Markdown`);
  let i = at + 1;
  while (i < lines.length && !lines[i].startsWith('|')) i++;
  const rows: string[][] = [];
  for (; i < lines.length && lines[i].startsWith('|'); i++)
    rows.push(lines[i].slice(2, -2).split(' | ').map(unescapeMarkdown));
  assert.match(rows[1]?.join('') ?? '', /^[-: ]+$/, `"${heading}": a header and a rule`);
  return rows.slice(2);
}

/** RFC 4180: quoted fields, doubled quotes, CRLF. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  assert.equal(field + row.join(''), '', 'the CSV ends with CRLF');
  return rows;
}

const only = <K extends ProbeResult['probe']>(report: RunReport, probe: K) =>
  report.results.filter((r): r is ResultOf<K> & ProbeResult => r.probe === probe);
/** The mode as the report names it: `cold` with the client that ran it. */
const modeOf = (r: ProbeResult) => {
  const mode = (r.variant as { mode?: string }).mode;
  const client = (r.details as { client?: { label: string } } | undefined)?.client;
  return mode === 'cold' && client ? `cold (${client.label})` : mode;
};

describe('probefleet report', () => {
  test('writes HTML, Markdown and CSV for a run JSON; without options it prints the text report', async () => {
    const at = (ext: string) => path.join(dir, `lecture-keepalive.${ext}`);
    const written = await runCli([
      'report',
      at('json'),
      '--html',
      at('html'),
      '--markdown',
      at('md'),
      '--csv',
      at('csv'),
    ]);
    assert.equal(written.code, 0, written.stderr);
    assert.equal(written.stdout, '');
    const expected = await formatsOf('lecture-keepalive');
    assert.equal(await readFile(at('html'), 'utf8'), expected.html);
    assert.equal(await readFile(at('md'), 'utf8'), expected.markdown);
    assert.equal(await readFile(at('csv'), 'utf8'), expected.csv);
    assert.match(expected.html, /^<!doctype html>\n<html lang="en">/);
    assert.match(expected.markdown, /^# probefleet run report: lecture-keepalive\n/);

    const printed = await runCli(['report', at('json')]);
    assert.equal(printed.code, 0, printed.stderr);
    assert.equal(printed.stdout, renderRunReport(runs.get('lecture-keepalive')!));

    // "-" is stdout, written either way: `--markdown -` as people type it, and `--markdown=-`.
    for (const args of [['--markdown', '-'], ['--markdown=-']]) {
      const piped = await runCli(['report', at('json'), ...args]);
      assert.equal(piped.code, 0, `${args.join(' ')}: ${piped.stderr}`);
      assert.equal(piped.stdout, expected.markdown, args.join(' '));
    }
    const csv = await runCli(['report', at('json'), '--csv', '-']);
    assert.equal(csv.stdout, expected.csv);
  });

  test('a file that is not a run JSON: each problem names the file and the field; the command exits 2 and writes nothing', async () => {
    const good = JSON.parse(await readFile(path.join(dir, 'lecture-keepalive.json'), 'utf8'));
    const broken = structuredClone(good);
    broken.results[1].summary.requests = 'many';
    broken.comparisons[0].newConnectionCostMs.ci95 = [1];
    const cases: [string, string, RegExp][] = [
      ['not-json', '{"schema": "probefleet.run/v1",', /^\S+not-json\.json: not JSON: /],
      [
        'a-plan',
        JSON.stringify({ name: 'x', targets: [] }),
        /^\S+a-plan\.json: schema: expected "probefleet\.run\/v1", found none \(write one with: probefleet run PLAN --json FILE\)$/,
      ],
      [
        'broken',
        JSON.stringify(broken),
        /^\S+broken\.json: results\[1\]\.summary\.requests: Invalid input: expected number, received string\n\S+broken\.json: comparisons\[0\]\.newConnectionCostMs\.ci95: /,
      ],
    ];
    for (const [name, content, expected] of cases) {
      const file = path.join(dir, `${name}.json`);
      await writeFile(file, content);
      await assert.rejects(
        readRunFile(file),
        (err: Error) => err instanceof RunFileError && expected.test(err.message),
        name,
      );
    }
    await assert.rejects(readRunFile(path.join(dir, 'nothing-here.json')), /nothing-here\.json: cannot read: ENOENT/);

    const { code, stdout, stderr } = await runCli([
      'report',
      path.join(dir, 'broken.json'),
      '--html',
      path.join(dir, 'broken.html'),
    ]);
    assert.equal(code, 2, stderr);
    assert.match(stderr, /^probefleet: \S+broken\.json: results\[1\]\.summary\.requests: /);
    assert.equal(stdout, '');
    await assert.rejects(readFile(path.join(dir, 'broken.html')), /ENOENT/, 'no HTML written');
  });

  test('a run file of over 10,000 results is read in parts: its summary, and its CSV a page at a time, whatever its layout', async () => {
    // 12,000 copies of a run's results, each job its own, written as `run --json` does and on one line.
    const small = runs.get('lecture-keepalive')!;
    const results = Array.from({ length: 12_000 }, (_, i) => {
      const result = small.results[i % small.results.length]!;
      return { ...result, jobId: `${result.jobId}-${i}` };
    });
    const big: RunReport = { ...small, results };
    const pretty = path.join(dir, 'big.json');
    const oneLine = path.join(dir, 'big-one-line.json');
    await writeFile(pretty, `${JSON.stringify(big, null, 2)}\n`);
    await writeFile(oneLine, JSON.stringify(big));
    const summary = renderRunSummary(headOf(big));
    for (const file of [pretty, oneLine]) {
      const text = await runCli(['report', file]);
      assert.equal(text.code, 0, text.stderr);
      assert.equal(text.stdout, summary, 'the summary of a big run, as `runs show` prints it');
      const csv = await runCli(['report', file, '--csv', '-']);
      assert.equal(csv.code, 0, csv.stderr);
      assert.equal(csv.stdout, renderCsvReport(big));
    }
    // `compare` of run files this big: report-parts.test.ts.
  });

  test('run --json --html --markdown --csv writes the same reports as `report` makes from its JSON', async () => {
    const plan = await writePlan(`
name: run-with-reports
targets:
  - name: http
    url: http://127.0.0.1:${lab.servers.keepalive.port}/
experiments:
  - probe: reuse
    requests: 5
    modes: [reused, new]
`);
    const at = (file: string) => path.join(dir, file);
    const run = await runCli([
      'run',
      plan,
      '--json',
      at('run.json'),
      '--html',
      at('run.html'),
      '--markdown',
      at('run.md'),
      '--csv',
      at('run.csv'),
    ]);
    assert.equal(run.code, 0, run.stderr);
    // --markdown=- prints it: the same bytes as the file.
    const again = await runCli([
      'report',
      at('run.json'),
      '--html',
      at('again.html'),
      '--markdown=-',
      '--csv',
      at('again.csv'),
    ]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, await readFile(at('run.md'), 'utf8'));
    for (const ext of ['html', 'csv'])
      assert.equal(await readFile(at(`again.${ext}`), 'utf8'), await readFile(at(`run.${ext}`), 'utf8'), ext);
    assert.match(await readFile(at('run.html'), 'utf8'), /data-chart="reuse-total-time"/);
  });
});

describe('Markdown and CSV say what the JSON says', () => {
  test('Markdown: the reuse, TLS, drain, compression and HTTP/2 tables, the costs, findings and decisions', async () => {
    for (const name of runs.keys()) {
      const report = runs.get(name)!;
      const { markdown } = await formatsOf(name);
      assert.ok(!/<(script|img|style|a)\b/i.test(markdown), `${name}: no HTML in the Markdown`);

      const reuse = only(report, 'reuse');
      if (reuse.length > 0) {
        const rows = markdownTable(markdown, '**Connection reuse: requests per mode');
        assert.equal(rows.length, reuse.length, name);
        for (const r of reuse) {
          const row = rows.find((cells) => cells[0] === r.region && cells[1] === r.target && cells[2] === modeOf(r));
          assert.ok(row, `${name}: a row for ${r.jobId}`);
          assert.deepEqual(row.slice(3, 6), [
            String(r.summary.requests),
            String(r.summary.connectionsOpened),
            formatMs(r.summary.durationMs),
          ]);
        }
      }
      if (report.comparisons.length > 0) {
        const rows = markdownTable(markdown, '**New-connection cost = median(new)');
        assert.deepEqual(
          rows.map((cells) => [cells[0], cells[1], cells[5], cells[7], cells[8]]),
          report.comparisons.map((c) => [
            c.region,
            c.target,
            c.noCostReason ? 'none' : formatMs(c.newConnectionCostMs.median),
            // A tail is shown from 20 new connections (p95) and 100 (p99); fewer print "-".
            (c.newConnectionCostTailMs?.n ?? 0) >= 20 ? formatMs(c.newConnectionCostTailMs?.p95) : '-',
            (c.newConnectionCostTailMs?.n ?? 0) >= 100 ? formatMs(c.newConnectionCostTailMs?.p99) : '-',
          ]),
          name,
        );
      }
      const tls = only(report, 'tls');
      if (tls.length > 0) {
        const rows = markdownTable(markdown, '**TLS handshakes: full');
        assert.equal(rows.length, tls.length, name);
        for (const r of tls) {
          const row = rows.find(
            (cells) => cells[0] === r.region && cells[1] === r.target && cells[2] === r.variant.version,
          )!;
          assert.equal(row[6], formatMs(r.details?.handshakeMs?.p50), `${name}: ${r.jobId} full handshake`);
          assert.equal(row[8], formatMs(r.details?.handshakeMs?.p99), `${name}: ${r.jobId} full handshake p99`);
        }
      }
      const drain = only(report, 'drain');
      if (drain.length > 0) {
        const rows = markdownTable(markdown, '**Drain: sequential HTTP/1.1 requests');
        // region, target, mode, client, requests, new conns: each row names its client.
        assert.deepEqual(
          rows.map((cells) => `${cells[1]} ${cells[3]} ${cells[5]}`).sort(),
          drain.map((r) => `${r.target} ${r.variant.client} ${r.summary.connectionsOpened}`).sort(),
          name,
        );
      }
      for (const r of only(report, 'compression')) {
        const table = r.details?.levelTable;
        if (!table || table.rows.length === 0) continue;
        const rows = markdownTable(markdown, `**Level table for ${r.target} (${r.region})`);
        assert.deepEqual(
          rows.map((cells) => [cells[0], cells[1], cells[2]]),
          table.rows.map((row) => [row.coding, String(row.level), formatCount(row.bytes)]),
          name,
        );
      }
      const http2 = only(report, 'http2');
      if (http2.length > 0) {
        const rows = markdownTable(markdown, '**HTTP/1.1 vs HTTP/2: header bytes');
        for (const r of http2) {
          const row = rows.find((cells) => cells[1] === r.target)!;
          const h1 = r.details!.h1HeaderBytes!;
          assert.equal(row[3], `${h1.request} / ${h1.response} B`, `${name}: ${r.target}`);
        }
      }
      if (report.findings.length > 0) {
        const rows = markdownTable(markdown, '## Findings');
        assert.deepEqual(
          rows.map((cells) => [cells[0], cells[1].split(':')[0], cells[3]]),
          report.findings.map((f) => [f.severity, f.code, f.evidence]),
          name,
        );
      }
      if (report.decisions.length > 0) {
        assert.deepEqual(
          markdownTable(markdown, '## Decision table'),
          report.decisions.map((d) => [d.situation, d.action, d.evidence]),
          name,
        );
      }
    }
  });

  test('CSV: one row per job and phase with the JSON numbers, one row per job without phases or result', async () => {
    for (const name of runs.keys()) {
      const report = runs.get(name)!;
      const { csv } = await formatsOf(name);
      const [header, ...rows] = parseCsv(csv);
      assert.deepEqual(header, [...CSV_COLUMNS]);
      const field = (row: string[], column: (typeof CSV_COLUMNS)[number]) => row[CSV_COLUMNS.indexOf(column)];
      let expectedRows = report.unfinishedJobs.length;
      for (const r of report.results) {
        const mine = rows.filter((row) => field(row, 'job_id') === r.jobId);
        const phases = PHASES.filter((p) => r.summary.phases[p]);
        expectedRows += Math.max(1, phases.length);
        assert.deepEqual(
          mine.map((row) => field(row, 'phase')),
          phases.length > 0 ? phases : [''],
          `${name}: ${r.jobId}`,
        );
        for (const row of mine) {
          assert.deepEqual(
            [field(row, 'region'), field(row, 'target'), field(row, 'probe'), field(row, 'status')],
            [r.region, r.target, r.probe, r.error ? 'error' : 'ok'],
          );
          assert.equal(Number(field(row, 'requests')), r.summary.requests);
          assert.equal(Number(field(row, 'connections_opened')), r.summary.connectionsOpened);
          assert.equal(Number(field(row, 'duration_ms')), r.summary.durationMs);
          const phase = r.summary.phases[field(row, 'phase') as (typeof PHASES)[number]];
          if (phase) {
            assert.equal(Number(field(row, 'p50_ms')), phase.p50, `${name}: ${r.jobId} ${field(row, 'phase')} p50`);
            assert.equal(Number(field(row, 'p95_ms')), phase.p95);
            assert.equal(Number(field(row, 'p99_ms')), phase.p99);
            assert.equal(Number(field(row, 'phase_samples')), phase.n);
          }
        }
      }
      for (const u of report.unfinishedJobs) {
        const row = rows.find((r) => field(r, 'job_id') === u.jobId)!;
        assert.deepEqual([field(row, 'status'), field(row, 'error'), field(row, 'requests')], [u.status, u.reason, '']);
      }
      assert.equal(rows.length, expectedRows, name);
    }
  });

  test('hostile values stay text: escaped in Markdown, no formula in CSV', async () => {
    const { markdown, csv } = await formatsOf('hostile');
    assert.ok(!markdown.includes('<script') && !markdown.includes('<img'), 'no markup');
    assert.ok(!/(?<!\\)\]\(http/.test(markdown), 'no link');
    const [header, ...rows] = parseCsv(csv);
    const error = rows.map((row) => row[header.indexOf('error')]).find((e) => e.includes('HYPERLINK'))!;
    assert.equal(error, `'${FORMULA} ${HOSTILE}`, 'a formula is prefixed with an apostrophe');
  });

  test('docs/reports.md documents every CSV column', async () => {
    const doc = await readFile(path.join(REPO_ROOT, 'docs', 'reports.md'), 'utf8');
    for (const column of CSV_COLUMNS) assert.match(doc, new RegExp(`^\\| \`${column}\` \\|`, 'm'), column);
  });
});

// --- the HTML in a browser ------------------------------------------------------------------

interface ChartSeen {
  id: string;
  bars: number;
  barLabels: string[];
  values: string[];
  whiskers: number;
  role: string | null;
  title: string;
  description: string;
}

/** The few DOM members the checks read (the project compiles without the DOM library). */
interface DomElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): Iterable<DomElement> & { length: number };
  ownerDocument: {
    getElementById(id: string): DomElement | null;
    defaultView: { getComputedStyle(e: DomElement): { backgroundColor: string } };
  };
}

/** A table's scrolling box, as the page sees it. */
interface ScrollBox {
  scrollWidth: number;
  clientWidth: number;
  closest(selector: string): { id: string } | null;
}

/** What each chart on the page shows, read from the DOM. */
function chartsOn(page: Page): Promise<ChartSeen[]> {
  return page.$$eval('svg.chart', (svgs: DomElement[]) =>
    svgs.map((svg) => {
      const [titleId, descId] = (svg.getAttribute('aria-labelledby') ?? '').split(' ');
      const texts = (selector: string) => [...svg.querySelectorAll(selector)].map((e) => e.textContent ?? '');
      return {
        id: svg.getAttribute('data-chart') ?? '',
        bars: svg.querySelectorAll('rect.bar').length,
        barLabels: texts('text.bar-label'),
        values: texts('text.value-label'),
        whiskers: svg.querySelectorAll('g.interval').length,
        role: svg.getAttribute('role'),
        title: svg.ownerDocument.getElementById(titleId)?.textContent ?? '',
        description: svg.ownerDocument.getElementById(descId)?.textContent ?? '',
      };
    }),
  );
}

const backgroundOf = (page: Page) =>
  page
    .locator('body')
    .evaluate((body: DomElement) => body.ownerDocument.defaultView.getComputedStyle(body).backgroundColor);

interface ChartExpected {
  id: string;
  bars: number;
  /** Texts that must be among the value labels. */
  values: string[];
  whiskers?: number;
  barLabels?: string[];
}

/** The charts a report must have, computed from the JSON alone. */
function expectedCharts(report: RunReport): ChartExpected[] {
  const charts: ChartExpected[] = [];
  const multiRegion = (results: ProbeResult[]) => new Set(results.map((r) => r.region)).size > 1;
  // Targets with no cost to show (reused requests stall, or the server closes every connection) get no bar.
  const costs = report.comparisons.filter((c) => !c.noCostReason);
  if (costs.length > 0) {
    charts.push({
      id: 'new-connection-cost',
      bars: costs.length,
      whiskers: costs.length,
      values: costs.map((c) => formatMs(c.newConnectionCostMs.median)),
    });
  }
  const reuse = only(report, 'reuse');
  if (reuse.length > 0) {
    charts.push({
      id: 'reuse-total-time',
      bars: reuse.length,
      values: reuse.map((r) => `${formatMs(r.summary.durationMs)} for ${r.summary.requests} requests`),
      barLabels: reuse.map((r) => (multiRegion(reuse) ? `${r.region} · ${modeOf(r)}` : modeOf(r)!)),
    });
  }
  for (const r of only(report, 'compression')) {
    const rows = r.details?.levelTable?.rows ?? [];
    if (rows.length > 0)
      charts.push({
        id: 'compression-level-sizes',
        bars: rows.length + 1,
        values: rows.map((row) => `${formatCount(row.bytes)} B`),
      });
  }
  const drain = only(report, 'drain');
  if (drain.length > 0)
    charts.push({
      id: 'drain-connections',
      bars: drain.length,
      values: drain.map((r) => `${r.summary.connectionsOpened} connection`),
    });
  const tls = only(report, 'tls');
  if (tls.length > 0) {
    charts.push({
      id: 'tls-handshake-time',
      bars: tls.length + tls.filter((r) => (r.details?.resumption?.attempted ?? 0) > 0).length,
      values: tls.flatMap((r) => (r.details?.handshakeMs ? [formatMs(r.details.handshakeMs.p50)] : [])),
    });
  }
  const http2 = only(report, 'http2');
  if (http2.length > 0) {
    const measured = (r: ResultOf<'http2'>) =>
      [r.details?.h1HeaderBytes, r.details?.h2HeaderBytesFirst, r.details?.h2HeaderBytesRepeat].filter(Boolean) as {
        request: number;
        response: number;
      }[];
    charts.push({
      id: 'http2-header-bytes',
      bars: http2.reduce((n, r) => n + 2 * measured(r).length, 0),
      values: http2.flatMap((r) => measured(r).map((b) => `${b.request} B`)),
    });
    const mux = (r: ResultOf<'http2'>) =>
      [r.details?.multiplexing.h1, r.details?.multiplexing.h2].filter(Boolean) as { totalMs: number }[];
    charts.push({
      id: 'http2-concurrent-time',
      bars: http2.reduce((n, r) => n + mux(r).length, 0),
      values: http2.flatMap((r) => mux(r).map((m) => formatMs(m.totalMs))),
    });
  }
  return charts;
}

describe('the HTML report in headless Chromium', needsChromium, () => {
  let browser: Browser;

  before(async () => {
    requireChromium();
    browser = await openBrowser();
    await mkdir(ARTIFACTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
  });

  /** Opens a report as a person would (file://) and collects anything it asked the network for or complained about. */
  async function open(name: string): Promise<{ page: Page; requests: string[]; problems: string[] }> {
    const { html } = await formatsOf(name);
    const file = path.join(ARTIFACTS, `${name}.html`);
    await writeFile(file, html);
    await writeFile(path.join(ARTIFACTS, `${name}.json`), `${JSON.stringify(runs.get(name), null, 2)}\n`);
    const url = pathToFileURL(file).href;
    const page = await browser.context.newPage();
    const requests: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => {
      if (request.url() !== url) requests.push(request.url());
    });
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning')
        problems.push(`console ${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('dialog', (dialog) => {
      problems.push(`dialog: ${dialog.message()}`);
      void dialog.dismiss();
    });
    await page.goto(url, { waitUntil: 'load' });
    return { page, requests, problems };
  }

  for (const name of [...Object.keys(EXAMPLES), 'two-regions']) {
    test(`${name}: loads with no errors and no requests; every chart with its bars, labels and numbers; light and dark`, async () => {
      const report = runs.get(name)!;
      const { page, requests, problems } = await open(name);
      try {
        assert.deepEqual(requests, [], 'no network requests');
        assert.deepEqual(problems, [], 'no console errors');
        assert.equal(await page.title(), `probefleet: ${report.plan.name}, run ${report.runId}`);

        // Each expected chart matches one chart on the page (several level charts may look alike), and nothing else is there.
        const unmatched = await chartsOn(page);
        for (const want of expectedCharts(report)) {
          const at = unmatched.findIndex(
            (c) => c.id === want.id && want.values.every((v) => c.values.some((text) => text.includes(v))),
          );
          assert.ok(
            at >= 0,
            `${want.id}: a chart showing ${want.values.join(', ')}; on the page: ${JSON.stringify(unmatched)}`,
          );
          const [chart] = unmatched.splice(at, 1);
          assert.equal(chart.bars, want.bars, `${want.id}: bars`);
          assert.equal(chart.barLabels.length, want.bars, `${want.id}: a label per bar`);
          assert.equal(chart.values.length, want.bars, `${want.id}: a value per bar`);
          if (want.whiskers !== undefined) assert.equal(chart.whiskers, want.whiskers, `${want.id}: intervals`);
          if (want.barLabels)
            assert.deepEqual([...chart.barLabels].sort(), [...want.barLabels].sort(), `${want.id}: bar labels`);
          assert.equal(chart.role, 'img');
          assert.ok(chart.title.length > 0, `${want.id}: a title`);
          for (const text of chart.values)
            assert.ok(chart.description.includes(text), `${want.id}: the description says "${text}"`);
        }
        assert.deepEqual(
          unmatched.map((c) => c.id),
          [],
          'no charts beyond those',
        );
        // Every table fits the page (the browser is 1200 px wide, less than a 1280 px window):
        // long cells break where a table allows it, none is cut off behind a scroll bar.
        const cut = await page.$$eval('.table-scroll', (boxes: ScrollBox[]) =>
          boxes
            .filter((box) => box.scrollWidth > box.clientWidth + 1)
            .map((box) => `${box.closest('section')?.id}: ${box.scrollWidth} px in ${box.clientWidth} px`),
        );
        assert.deepEqual(cut, [], 'tables wider than the page');
        const sections = await page.locator('main > section > h2').allTextContents();
        assert.ok(sections.includes('Findings') && sections.includes('Decision table'), sections.join(', '));
        assert.equal(await page.locator('#decisions tbody tr').count(), report.decisions.length);
        assert.equal(await page.locator('#findings tbody tr').count(), report.findings.length);

        await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
        const light = await backgroundOf(page);
        await page.emulateMedia({ colorScheme: 'dark' });
        const dark = await backgroundOf(page);
        assert.notEqual(dark, light, 'dark mode has its own colours');
        await page.screenshot({ path: path.join(ARTIFACTS, `${name}-dark.png`), fullPage: true });
        assert.deepEqual(problems, []);
      } finally {
        await page.close();
      }
    });
  }

  test('hostile strings from a run show as text: no script, image or request, nothing runs', async () => {
    const { page, requests, problems } = await open('hostile');
    try {
      assert.deepEqual(requests, []);
      assert.deepEqual(problems, []);
      assert.equal(await page.locator('script, img, iframe, object, embed, link, a[href^="http"]').count(), 0);
      // Each place a server's words (or a plan's) end up shows them as the text they are.
      for (const where of [
        'header',
        '#targets',
        '#probe-cors',
        '#probe-compression',
        '#unfinished',
        '#findings',
        '#decisions',
      ]) {
        assert.ok((await page.locator(where).textContent())?.includes(HOSTILE), where);
      }
      assert.equal(
        await page.locator('#unfinished tbody tr').count(),
        2,
        'the failed result and the job without a result',
      );
      await page.screenshot({ path: path.join(ARTIFACTS, 'hostile.png'), fullPage: true });
    } finally {
      await page.close();
    }
  });
});
