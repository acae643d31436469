// `probefleet compare` on real runs against the lab: a target switched from a TCP_NODELAY server
// to a Nagle-stalled one (regressed: the stall is the kernel's delayed-ACK timer, at least 40 ms,
// which load does not shorten), a run against itself (unchanged), plans that do not match, bad
// input, and the Markdown and HTML it writes. Runs happen in this process at a real-time priority
// when the machine allows it (test/helpers/realtime.ts); the comparisons are made by the real CLI
// from the run JSON files.
import assert from 'node:assert/strict';
import { access, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { comparisonSchema, type RunComparison } from '../../contracts/comparison.js';
import type { RunReport } from '../../contracts/result.js';
import { compareRuns } from '../../coordinator/compare/compare-runs.js';
import { startLab, type Lab } from '../../lab/index.js';
import { createLogger } from '../../common/log.js';
import { needsChromium, openBrowser, requireChromium } from '../helpers/chromium.js';
import { runPlanText } from '../helpers/example-runs.js';
import { atRealtimePriority } from '../helpers/realtime.js';
import { REPO_ROOT, runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';
import { runAlone } from '../helpers/exclusive.js';
import { freeLoopbackPort } from '../../common/redis-server.js';
import { EXIT_REDIS_UNREACHABLE } from '../../cli/exit-codes.js';

// Measures at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

let lab: Lab;
let dir: string;

/** examples/compare-nightly.yaml on this lab: reuse (100 requests per mode, enough for a p95
 * interval) on http and https, and 80 TLS handshakes per version; `httpPath` moves the http target. */
let examplePlan: string;
const pairPlan = (httpPath = '/') => examplePlan.replace('url: lab:keepalive/\n', `url: lab:keepalive${httpPath}\n`);

let runs = 0;
/** Runs a plan at a real-time priority (when allowed) and writes its JSON; returns both. */
async function measured(planText: string): Promise<{ report: RunReport; file: string; realtime: boolean }> {
  const runId = `compare-test-${++runs}`;
  const { value: report, realtime } = await atRealtimePriority(() =>
    runPlanText(planText, 'plan.yaml', { runId, lab }),
  );
  const file = path.join(dir, `${runId}.json`);
  await writeFile(file, JSON.stringify(report));
  return { report, file, realtime };
}

const find = (c: RunComparison, match: Partial<Record<'target' | 'probe' | 'quantity', string>>, mode?: string) =>
  c.quantities.filter(
    (q) =>
      Object.entries(match).every(([k, v]) => q[k as keyof typeof match] === v) &&
      (mode === undefined || q.variant.mode === mode),
  );

before(async () => {
  lab = await startLab({ log: createLogger('test', 'silent') });
  dir = tempDir('probefleet-compare-');
  examplePlan = await readFile(path.join(REPO_ROOT, 'examples', 'compare-nightly.yaml'), 'utf8');
});
after(async () => {
  await lab?.close();
});

describe('a target switched from a TCP_NODELAY server to a Nagle-stalled one', () => {
  let beforeRun: Awaited<ReturnType<typeof measured>>;
  let afterRun: Awaited<ReturnType<typeof measured>>;
  let comparison: RunComparison;

  before(async () => {
    // The same target name and server; the path /nagle writes headers and body apart with Nagle on.
    beforeRun = await measured(pairPlan('/'));
    afterRun = await measured(pairPlan('/nagle'));
    const shown = await runCli(['compare', beforeRun.file, afterRun.file, '--json=-']);
    assert.equal(shown.code, 0, shown.stderr);
    comparison = comparisonSchema.parse(JSON.parse(shown.stdout));
  });

  test('the CLI prints what compareRuns makes from the two files (deterministic: seeded, rank-based)', async () => {
    const made = await compareRuns([beforeRun.report], afterRun.report, {
      baseline: [beforeRun.file],
      after: afterRun.file,
    });
    assert.deepEqual(comparison, JSON.parse(JSON.stringify(made)));
  });

  test('reused requests regressed by about 40 ms: with one earlier run, a change beyond any plausible noise', () => {
    const [total] = find(comparison, { target: 'http', probe: 'reuse', quantity: 'phase_total_p50' }, 'reused');
    assert.equal(total.verdict, 'regressed', JSON.stringify(total));
    // Delayed ACK on Linux holds the body 40 ms (at least; ~44 ms measured): the change is that, give or take.
    assert.ok(total.change > 30 && total.change < 250, `change ${total.change} ms`);
    assert.equal(total.reason, 'beyond-any-noise');
    assert.ok(total.afterCi95 && total.afterCi95[0] - total.baseline.median > 5, `interval ${total.afterCi95}`);
    const [transfer] = find(comparison, { target: 'http', quantity: 'phase_transfer_p50' }, 'reused');
    assert.equal(transfer.verdict, 'regressed', 'the time went into transfer: the body waited');
    // The new-connection cost fell below zero because reused requests got slower: a regression, not an improvement.
    const [cost] = find(comparison, { target: 'http', quantity: 'new_connection_cost' });
    assert.ok(cost.change < -30, `cost change ${cost.change}`);
    assert.equal(cost.verdict, 'regressed');
    // A new connection per request never meets the stall (no reused socket to wait on).
    const [fresh] = find(comparison, { target: 'http', quantity: 'phase_total_p50' }, 'new');
    assert.ok(Math.abs(fresh.change) < 30, `new-connection requests changed by ${fresh.change} ms`);
    assert.notEqual(fresh.verdict, 'regressed');
  });

  test('the Nagle finding appeared; the URL change is named; --fail-on exits 3 (not 1 or 2)', async () => {
    assert.deepEqual(
      comparison.findings.map((f) => [f.change, f.code, f.target]),
      [['appeared', 'NAGLE_DELAYED_ACK_STALL', 'http']],
    );
    assert.deepEqual(comparison.differences, [
      { kind: 'target-url', where: 'http', before: lab.url('keepalive', '/'), after: lab.url('keepalive', '/nagle') },
    ]);
    const plain = await runCli(['compare', beforeRun.file, afterRun.file]);
    assert.equal(plain.code, 0, 'without --fail-on a regression is reported, not an exit code');
    assert.match(plain.stdout, /What changed\n.*\n.*\n\s+regressed\s+local http reuse reused http\s+/);
    for (const failOn of ['regression', '50%']) {
      const gated = await runCli(['compare', beforeRun.file, afterRun.file, '--fail-on', failOn]);
      assert.equal(gated.code, 3, `--fail-on ${failOn}: ${gated.stderr}`);
      assert.match(gated.stderr, /regressed: local http reuse reused http phase_total_p50/);
      assert.match(gated.stderr, /finding appeared: NAGLE_DELAYED_ACK_STALL \(http, local\)/);
    }
  });

  test('Markdown and HTML: the same rows, escaped; a before/after chart per region; nothing fetched', async () => {
    const md = path.join(dir, 'nagle.md');
    const page = path.join(dir, 'nagle.html');
    const written = await runCli(['compare', beforeRun.file, afterRun.file, '--markdown', md, '--html', page]);
    assert.equal(written.code, 0, written.stderr);
    assert.equal(written.stdout, '', 'files asked for: nothing on stdout');
    const markdown = await readFile(md, 'utf8');
    assert.match(markdown, /^## What changed$/m);
    assert.match(markdown, /\| regressed \| local http reuse reused http \| total p50 \|/);
    assert.equal((markdown.match(/^\| local \|/gm) ?? []).length, comparison.quantities.length);
    const htmlText = await readFile(page, 'utf8');
    assert.equal((htmlText.match(/data-chart="before-after"/g) ?? []).length, 1, 'one region, one chart');
    assert.doesNotMatch(htmlText, /<script|<img|<link/);
  });

  test(
    'the HTML in headless Chromium: no errors, no requests, the chart with a bar per run',
    needsChromium,
    async () => {
      requireChromium();
      const browser = await openBrowser();
      try {
        const file = path.join(dir, 'nagle.html');
        const url = pathToFileURL(file).href;
        const p = await browser.context.newPage();
        const problems: string[] = [];
        p.on('request', (r) => r.url() !== url && problems.push(`request ${r.url()}`));
        p.on('console', (m) => problems.push(`console ${m.type()}: ${m.text()}`));
        p.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
        await p.goto(url, { waitUntil: 'load' });
        assert.deepEqual(problems, []);
        const bars = await p.locator('svg[data-chart="before-after"] rect.bar').count();
        const groups = comparison.quantities.filter((q) =>
          ['new_connection_cost', 'phase_total_p50', 'handshake_full_p50', 'handshake_resumed_p50'].includes(
            q.quantity,
          ),
        ).length;
        assert.equal(bars, 2 * groups);
        assert.equal(await p.locator('#changed .badge-regressed').count(), comparison.summary.regressed);
      } finally {
        await browser.close();
      }
    },
  );
});

// How often twin runs against the same servers are called different is a measurement of the
// machine and the network, not a property of the code: bench/verdicts.ts counts it (docs/compare.md,
// "Proof: twin and regression runs"). What the code guarantees: a run compared with itself changed nothing.
test('a run compared with itself: every quantity unchanged, no finding changed, --fail-on regression exits 0', async () => {
  const run = await measured(pairPlan());
  const c = await compareRuns([run.report], run.report);
  assert.deepEqual(c.differences, []);
  assert.deepEqual(c.findings, []);
  assert.deepEqual(
    c.quantities.filter((q) => q.verdict !== 'unchanged' || q.change !== 0),
    [],
    'no change, so every verdict is unchanged',
  );
  // Every headline quantity was there to be judged: costs, medians and tails, handshakes, shares.
  assert.ok(c.quantities.length >= 50, `${c.quantities.length} quantities`);
  const gated = await runCli(['compare', run.file, run.file, '--fail-on', 'regression']);
  assert.equal(gated.code, 0, gated.stderr);
  assert.match(gated.stdout, /What changed\n {2}Nothing regressed or improved/);
  assert.match(gated.stdout, /\s+unchanged\s+within the run's own noise\n/, 'each verdict says why');
});

test('mismatched plans: compared on what they share, and what they do not share is named', async () => {
  const a = await measured(`
name: mismatch-a
targets:
  - { name: http, url: "${lab.url('keepalive')}" }
  - { name: https, url: "${lab.url('https')}", tls: { insecure: true } }
  - { name: php-like, url: "${lab.url('close')}" }
experiments:
  - { probe: reuse, requests: 30, modes: [reused, new] }
`);
  const b = await measured(`
name: mismatch-b
regions: [local, second]
targets:
  - { name: http, url: "${lab.url('keepalive')}" }
  - { name: https, url: "${lab.url('https')}", tls: { insecure: true } }
  - { name: gzip, url: "${lab.url('keepalive', '/assets/products.json')}" }
experiments:
  - { probe: reuse, targets: [http, https], requests: 40, modes: [reused] }
  - { probe: compression, targets: [gzip], requests: 3 }
`);
  const shown = await runCli(['compare', a.file, b.file, '--json=-']);
  assert.equal(shown.code, 0, shown.stderr);
  const c = comparisonSchema.parse(JSON.parse(shown.stdout));
  const differences = c.differences.map((d) => `${d.kind} ${d.where}: ${d.before} -> ${d.after}`);
  assert.deepEqual(differences.sort(), [
    'experiment http reuse: new http -> null',
    'experiment https reuse: new https -> null',
    'parameters http reuse: modes: ["reused","new"], requests: 30 -> modes: ["reused"], requests: 40',
    'parameters https reuse: modes: ["reused","new"], requests: 30 -> modes: ["reused"], requests: 40',
    'plan plan: mismatch-a -> mismatch-b',
    'region second: null -> second',
    `target gzip: null -> ${lab.url('keepalive', '/assets/products.json')}`,
    `target php-like: ${lab.url('close')} -> null`,
  ]);
  // Compared: the reused jobs both plans have (matched although their parameters differ), in the region both have.
  const places = new Set(c.quantities.map((q) => `${q.region} ${q.target} ${q.probe} ${q.variant.mode}`));
  assert.deepEqual([...places].sort(), ['local http reuse reused', 'local https reuse reused']);
  assert.ok(find(c, { quantity: 'phase_total_p50' }).length === 2);
  // Not compared, each with why: the jobs one run has.
  const whole = c.notCompared
    .filter((n) => !n.quantity)
    .map((n) => `${n.region} ${n.target} ${n.probe} ${Object.values(n.variant).join(' ')}: ${n.reason}`);
  assert.deepEqual(whole.sort(), [
    'local gzip compression http: only in the after run',
    'local http reuse new http: only in the before run',
    'local https reuse new https: only in the before run',
    'local php-like reuse new http: only in the before run',
    'local php-like reuse reused http: only in the before run',
    'second gzip compression http: only in the after run',
    'second http reuse reused http: only in the after run',
    'second https reuse reused https: only in the after run',
  ]);
  // php-like's finding (it closes every connection) is on a target the after run does not have: not "disappeared".
  assert.ok(a.report.findings.some((f) => f.code === 'SERVER_CLOSES_EVERY_CONNECTION'));
  assert.deepEqual(c.findings, []);
  const text = await runCli(['compare', a.file, b.file]);
  assert.match(
    text.stdout,
    /What this run and the run before do not share\n.*\n.*\n\s+plan name\s+plan\s+mismatch-a\s+mismatch-b/,
  );
});

test('compare --redis with nothing listening: exit 4 after its --redis-timeout, naming where (not a wait without end)', async () => {
  const port = await freeLoopbackPort();
  const { code, stdout, stderr } = await runCli(
    ['compare', '--redis', `redis://127.0.0.1:${port}`, '--redis-timeout', '1', '--previous', 'nightly-1'],
    { env: { REDIS_URL: '' } },
  );
  assert.equal(code, EXIT_REDIS_UNREACHABLE, stderr);
  assert.match(stderr, new RegExp(`cannot reach Redis at redis://127\\.0\\.0\\.1:${port}`));
  assert.equal(stdout, '');
});

test('the coordinator takes --comparison-heap-mb too, and refuses one too small before it connects (exit 2)', async () => {
  const port = await freeLoopbackPort();
  const { code, stderr } = await runCli(
    ['coordinator', '--redis', `redis://127.0.0.1:${port}`, '--port', '0', '--comparison-heap-mb', '8'],
    { env: { REDIS_URL: '' } },
  );
  assert.equal(code, 2, stderr);
  assert.match(stderr, /--comparison-heap-mb: a whole number of MB, at least 64 \(got "8"\)/);
});

describe('bad input: exit 2, naming the file and the field; nothing written', () => {
  let good: string;
  before(async () => {
    good = path.join(dir, 'good.json');
    await writeFile(good, JSON.stringify((await measured(pairPlan())).report));
  });

  const cases: [string, () => Promise<string[]>, RegExp][] = [
    [
      'a JSON that is not a run',
      async () => {
        const file = path.join(dir, 'not-a-run.json');
        await writeFile(file, JSON.stringify({ schema: 'probefleet.run/v1', runId: 7 }));
        return [file, good];
      },
      /not-a-run\.json: runId: Invalid input: expected string, received number/,
    ],
    [
      'another schema',
      async () => {
        const file = path.join(dir, 'catalogue.json');
        await writeFile(file, JSON.stringify({ schema: 'probefleet.metric-catalogue/v1' }));
        return [good, file];
      },
      /catalogue\.json: schema: expected "probefleet\.run\/v1", found "probefleet\.metric-catalogue\/v1"/,
    ],
    [
      'a plan instead of a run',
      async () => {
        const file = path.join(dir, 'plan.yaml');
        await writeFile(file, pairPlan());
        return [file, good];
      },
      /plan\.yaml: not JSON/,
    ],
    ['a file that is not there', async () => [path.join(dir, 'missing.json'), good], /missing\.json: cannot read/],
    ['one run only', async () => [good], /compare needs the earlier runs and then the new one: EARLIER\.\.\. AFTER/],
    [
      '--fail-on that means nothing',
      async () => [good, good, '--fail-on', 'slower'],
      /--fail-on: expected "regression" or a percentage/,
    ],
    ['--previous without Redis', async () => ['--previous', good], /--previous reads stored runs: give --redis URL/],
    [
      "a comparison's heap too small to start",
      async () => [good, good, '--comparison-heap-mb', '8'],
      /--comparison-heap-mb: a whole number of MB, at least 64 \(got "8"\)/,
    ],
  ];
  for (const [name, args, message] of cases) {
    test(name, async () => {
      const out = path.join(dir, `${name.replace(/\W+/g, '-')}.out.json`);
      const { code, stdout, stderr } = await runCli(['compare', ...(await args()), '--json', out], {
        env: { REDIS_URL: '' },
      });
      assert.equal(code, 2, stderr);
      assert.match(stderr, message);
      assert.equal(stdout, '');
      await assert.rejects(access(out), 'nothing written');
    });
  }
});
