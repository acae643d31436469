// A plan of 2,000 targets from two file_sd lists (one JSON, one YAML) through region workers as
// separate OS processes on a real Redis: every job runs, each result carries its target's labels,
// the report groups by them, and the metrics reach a Pushgateway: probefleet_target_info with the
// labels for every target in the run's group, and every target's job counter in the workers'
// groups. A cheap probe (one request per job, on loopback) keeps it to seconds.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { loadPlanFile } from '../../coordinator/plan-loader.js';
import { renderHtmlReport } from '../../coordinator/report/html.js';
import { renderMarkdownReport } from '../../coordinator/report/markdown.js';
import { startLab, type Lab } from '../../lab/index.js';
import { spawnCli, startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { needsPrometheus, startPushgateway, type Pushgateway } from '../helpers/prometheus.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');
const TARGETS = 2_000;
/** Targets per file_sd entry: an entry's labels are its targets'. */
const PER_ENTRY = 10;
const TEAMS = 20;
const SERVICES = 100;

interface Entry {
  targets: string[];
  labels: { team: string; service: string };
}

/** Entries of `PER_ENTRY` URLs on the lab's keep-alive server, `?n=` telling them apart. */
function entries(lab: Lab, from: number, count: number): Entry[] {
  const base = lab.url('keepalive');
  return Array.from({ length: count / PER_ENTRY }, (_, e) => {
    const entry = from / PER_ENTRY + e;
    return {
      targets: Array.from({ length: PER_ENTRY }, (_, t) => `${base}?n=${entry * PER_ENTRY + t}`),
      labels: { team: `team-${entry % TEAMS}`, service: `svc-${entry % SERVICES}` },
    };
  });
}

/** The value of each sample of a metric in the Pushgateway's text, with its labels. */
function samplesIn(text: string, metric: string): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => [k, v]));
    out.push(labels);
  }
  return out;
}

describe('a plan of 2,000 targets from files, through region workers on Redis', needsRedis, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let gateway: Pushgateway | undefined;
  const workers: CliProcess[] = [];
  let dir: string;
  let planFile: string;
  let coordinator: CliProcess | undefined;
  let fleet: Fleet | undefined;

  before(async () => {
    requireRedis();
    lab = await startLab({ log });
    if (!needsPrometheus.skip) gateway = await startPushgateway();
    const push = (instance: string) => (gateway ? ['--pushgateway', gateway.url, '--instance', instance] : []);
    workers.push(
      ...(await Promise.all([
        startWorkerProcess('a', TEST_REDIS_URL, prefix, push('w1')),
        startWorkerProcess('a', TEST_REDIS_URL, prefix, push('w2')),
      ])),
    );
    dir = tempDir('probefleet-targetfiles-run-');
    const half = TARGETS / 2;
    await writeFile(path.join(dir, 'services.json'), JSON.stringify(entries(lab, 0, half), null, 2));
    await writeFile(path.join(dir, 'more-services.yaml'), stringify(entries(lab, half, half)));
    planFile = path.join(dir, 'plan.yaml');
    await writeFile(
      planFile,
      `name: two-thousand
regions: [a]
jobTimeoutSeconds: 30
targetLabels: [team, service]
targetFiles:
  - name: services
    files: [services.json, more-*.yaml]
experiments:
  - { probe: reuse, requests: 1, modes: [reused] }
`,
    );
  });

  after(async () => {
    await coordinator?.stop();
    await fleet?.close();
    await Promise.all(workers.map((w) => w.stop()));
    await gateway?.stop();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('loading it reads both files into 2,000 named, labelled targets', async (t) => {
    const started = performance.now();
    const loaded = await loadPlanFile(planFile);
    t.diagnostic(`loading the plan of ${TARGETS} targets took ${(performance.now() - started).toFixed(0)} ms`);
    assert.equal(loaded.plan.targets.length, TARGETS);
    assert.equal(new Set(loaded.plan.targets.map((x) => x.name)).size, TARGETS);
    assert.deepEqual([...new Set(loaded.plan.targets.map((x) => x.file))], ['services.json', 'more-services.yaml']);
    const n = 1234;
    const target = loaded.plan.targets.find((x) => x.url.endsWith(`?n=${n}`))!;
    assert.deepEqual(target.labels, {
      team: `team-${Math.floor(n / PER_ENTRY) % TEAMS}`,
      service: `svc-${Math.floor(n / PER_ENTRY) % SERVICES}`,
    });
  });

  test('every job runs on the workers, with its labels in results, report, CSV and metrics', async (t) => {
    const json = path.join(dir, 'run.json');
    const csv = path.join(dir, 'run.csv');
    const started = performance.now();
    const { code, stdout, stderr } = await runCli(
      [
        'run',
        planFile,
        '--redis',
        TEST_REDIS_URL,
        '--prefix',
        prefix,
        '--json',
        json,
        '--csv',
        csv,
        ...(gateway ? ['--pushgateway', gateway.url] : []),
      ],
      { timeoutMs: 600_000 },
    );
    t.diagnostic(
      `run of ${TARGETS} jobs on 2 workers: ${((performance.now() - started) / 1000).toFixed(1)} s (the CLI's start included)`,
    );
    assert.equal(code, 0, stderr);

    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    assert.deepEqual(report.unfinishedJobs, []);
    assert.equal(report.results.length, TARGETS);
    assert.equal(new Set(report.results.map((r) => r.target)).size, TARGETS);
    const failed = report.results.filter((r) => !r.ok);
    assert.deepEqual(
      failed.map((r) => `${r.target}: ${r.error?.message}`),
      [],
    );
    const labelsOf = new Map(report.plan.targets.map((x) => [x.name, x.labels]));
    for (const r of report.results) assert.deepEqual(r.labels, labelsOf.get(r.target), r.jobId);
    assert.deepEqual(
      new Set(report.results.map((r) => r.worker.pid)),
      new Set(workers.map((w) => w.pid)),
      'both workers took jobs',
    );

    // The report groups the targets by each label; the CSV has a column per label.
    const byTeam = stdout.slice(stdout.indexOf('Targets by team'));
    for (let team = 0; team < TEAMS; team++)
      assert.match(
        byTeam,
        new RegExp(`\\n  team-${team} +${TARGETS / TEAMS} +${TARGETS / TEAMS} +${TARGETS / TEAMS} +0 +0\\n`),
      );
    assert.match(stdout, /\nTargets by service\n/);
    assert.match(
      renderMarkdownReport(report),
      /\n## Targets by label\n\n\*\*Targets by team\*\*\n\n\| team \| targets \|/,
    );
    const html = renderHtmlReport(report);
    assert.match(html, /<section id="targets-by-label"><h2>Targets by label<\/h2>/);
    assert.match(html, /<th[^>]*>URL<\/th><th[^>]*>team<\/th><th[^>]*>service<\/th>/);
    const [header, first] = (await readFile(csv, 'utf8')).split('\r\n');
    assert.match(header, /,label_team,label_service$/);
    const target = first.split(',')[3];
    assert.ok(first.endsWith(`,${labelsOf.get(target)!.team},${labelsOf.get(target)!.service}`), first);

    if (!gateway) return t.diagnostic('no Pushgateway here: metrics not checked');
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const info = samplesIn(text, 'probefleet_target_info').filter((s) => s.job === 'probefleet_run');
    assert.equal(info.length, TARGETS);
    for (const s of info) {
      assert.equal(s.plan, 'two-thousand');
      assert.equal(s.region, 'a');
      assert.deepEqual({ team: s.team, service: s.service }, labelsOf.get(s.target), s.target);
    }
    // The workers push at most every 5 s and at once when they stop: wait for every target's count.
    let pushed = text;
    const jobsCounted = () =>
      new Set(
        samplesIn(pushed, 'probefleet_probe_jobs_total')
          .filter((s) => s.job === 'probefleet' && s.outcome === 'ok')
          .map((s) => s.target),
      );
    const until = Date.now() + 60_000;
    while (jobsCounted().size < TARGETS && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      pushed = await (await fetch(`${gateway.url}/metrics`)).text();
    }
    const counted = jobsCounted();
    assert.deepEqual(
      [...labelsOf.keys()].filter((name) => !counted.has(name)),
      [],
    );
    const series = pushed
      .split('\n')
      .filter((l) => l.startsWith('probefleet_') && l.includes('job="probefleet"')).length;
    t.diagnostic(
      `the workers' groups hold ${series.toLocaleString('en-US')} probefleet series for ${TARGETS} targets (the gateway's /metrics: ${(pushed.length / 1024 / 1024).toFixed(1)} MiB)`,
    );
  });

  test("a schedule reads its files again at each firing, and the coordinator finishes runs whose plan holds 9,000 targets (over 1 MiB of a run's data)", async (t) => {
    const redis = ['--redis', TEST_REDIS_URL, '--prefix', prefix];
    coordinator = spawnCli(['coordinator', ...redis, '--port', '0']);
    await coordinator.waitFor(/"msg":"coordinator ready"/);
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    const base = lab.url('keepalive');
    const few = (team: string) =>
      JSON.stringify([{ targets: [1, 2, 3].map((n) => `${base}?few=${n}`), labels: { team } }]);
    await writeFile(path.join(dir, 'few.json'), few('before'));
    // Targets no experiment runs on: they make the plan as run (in the schedule and in each run's data) large.
    const many = Array.from({ length: 9_000 }, (_, n) => `${base}never-probed/by-this-schedule/target-${n}`);
    await writeFile(path.join(dir, 'many.json'), JSON.stringify([{ targets: many }]));
    const scheduled = path.join(dir, 'scheduled.yaml');
    await writeFile(
      scheduled,
      `name: scheduled-files
regions: [a]
targetLabels: [team]
targetFiles:
  - { name: few, files: [few.json] }
  - { name: many, files: [many.json] }
experiments:
  - { probe: reuse, requests: 1, modes: [reused], targets: [few] }
`,
    );
    const added = await runCli(['schedule', 'add', scheduled, '--every', '3', ...redis], { timeoutMs: 60_000 });
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /schedule scheduled-files: every 3 s, 3 jobs over a;/);

    /** The first stored run of the schedule whose results say `team` (each report read once: they are large). */
    const seen = new Set<string>();
    const runWith = async (team: string) => {
      const until = Date.now() + 120_000;
      while (Date.now() < until) {
        for (const summary of await fleet!.store.list(100)) {
          if (summary.plan !== 'scheduled-files' || seen.has(summary.runId)) continue;
          seen.add(summary.runId);
          const report = (await fleet!.store.get(summary.runId))!;
          if (report.results.some((r) => r.labels?.team === team)) return report;
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      assert.fail(`no stored run with team ${team}:\n${coordinator!.stderr().slice(-3000)}`);
    };
    const before = await runWith('before');
    assert.equal(before.plan.targets.length, 9_003);
    assert.equal(before.results.length, 3);
    assert.ok(before.results.every((r) => r.ok && r.labels?.team === 'before'));
    // The list changes between firings: the next runs probe what it holds then.
    await writeFile(path.join(dir, 'few.json'), few('after'));
    const after = await runWith('after');
    assert.ok(after.results.every((r) => r.ok && r.labels?.team === 'after'));
    assert.ok(after.startedAt > before.startedAt);
    const removed = await runCli(['schedule', 'remove', 'scheduled-files', ...redis]);
    assert.equal(removed.code, 0, removed.stderr);
    assert.doesNotMatch(coordinator.stderr(), /JOB_DATA_TOO_LARGE/);
    t.diagnostic(`a run's data: ${JSON.stringify(before.plan).length.toLocaleString('en-US')} characters of plan`);
  });
});
