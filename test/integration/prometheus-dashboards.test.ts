// The whole metrics path with real parts: a coordinator and a region worker (the real CLI, their
// own processes) push to a real Pushgateway, a real Prometheus scrapes it (honor_labels) and the
// two processes' /metrics, and evaluates the alert rules. After two runs of a plan that uses
// every probe, every dashboard panel's query returns data, every series has exactly the
// catalogue's labels, and the handshake alert fires for the slow lab server and not for the fast one.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { buildCatalogue } from '../../dashboards/src/catalogue.js';
import { DASHBOARDS } from '../../dashboards/src/dashboards.js';
import { prometheusConfig } from '../../common/prometheus-config.js';
import { startLab, type Lab } from '../../lab/index.js';
import { everyProbePlan } from '../helpers/metrics-plan.js';
import { needsNginx, startNginx, type Nginx } from '../helpers/nginx.js';
import { writePlan } from '../helpers/plans.js';
import {
  needsPrometheus,
  requirePrometheus,
  startPrometheus,
  startPushgateway,
  type Prometheus,
  type Pushgateway,
} from '../helpers/prometheus.js';
import { spawnCli, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, freePort, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { REPO_ROOT, runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');
const REGION = 'eu-west';
const PLAN = 'dashboards-e2e';
const INSTANCE = 'e2e-worker';
/** What the dashboards' variables become: every region and target, a window that covers the test. */
/** `$label`: the target label examples/metrics-lab.yaml declares. */
const VARIABLE_VALUES: Record<string, string> = { $region: '.*', $target: '.*', $window: '15m', $label: 'team' };

/** The committed rules, evaluated every second and without `for`, so an alert fires as soon as its condition holds. */
async function rulesFiringAtOnce(): Promise<string> {
  const rules = parse(await readFile(path.join(REPO_ROOT, 'dashboards/alerts/probefleet.rules.yml'), 'utf8')) as {
    groups: { interval: string; rules: { for?: string }[] }[];
  };
  for (const group of rules.groups) {
    group.interval = '1s';
    for (const rule of group.rules) rule.for = '0s';
  }
  return stringify(rules);
}

/** The report the coordinator stored for a run, once it is there. */
async function storedReport(runId: string, redis: string[]): Promise<RunReport> {
  const until = Date.now() + 180_000;
  for (;;) {
    const shown = await runCli(['runs', 'show', runId, '--json', ...redis]);
    if (shown.code === 0) return runReportSchema.parse(JSON.parse(shown.stdout)) as RunReport;
    if (Date.now() > until) throw new Error(`no stored report for ${runId}: ${shown.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('runs through the Pushgateway into Prometheus: dashboards, catalogue and alerts', {
  skip: needsPrometheus.skip || needsRedis.skip || needsNginx.skip,
}, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let nginx: Nginx;
  let gateway: Pushgateway;
  let prometheus: Prometheus;
  let coordinator: CliProcess;
  let worker: CliProcess;
  let workerMetricsPort: number;
  const reports: RunReport[] = [];

  before(async () => {
    requirePrometheus();
    requireRedis();
    lab = await startLab({ log });
    gateway = await startPushgateway();
    const coordinatorPort = await freePort();
    workerMetricsPort = await freePort();
    const redis = ['--redis', TEST_REDIS_URL, '--prefix', prefix];
    coordinator = spawnCli([
      'coordinator',
      ...redis,
      '--port',
      String(coordinatorPort),
      '--region',
      REGION,
      '--pushgateway',
      gateway.url,
    ]);
    worker = spawnCli([
      'worker',
      ...redis,
      '--allow-loopback',
      '--region',
      REGION,
      '--pushgateway',
      gateway.url,
      '--instance',
      INSTANCE,
      '--metrics-port',
      String(workerMetricsPort),
    ]);
    await Promise.all([coordinator.waitFor(/"msg":"coordinator ready"/), worker.waitFor(/"msg":"worker ready"/)]);
    const config = prometheusConfig({
      pushgateway: [`127.0.0.1:${gateway.port}`],
      coordinator: [`127.0.0.1:${coordinatorPort}`],
      workers: [`127.0.0.1:${workerMetricsPort}`],
      rules: ['rules.yml'],
      scrapeInterval: '1s',
      evaluationInterval: '1s',
    });
    prometheus = await startPrometheus(config, { 'rules.yml': await rulesFiringAtOnce() });

    // Two runs, as on two nights: increase() over cumulative series needs a value before and after.
    // The first is waited for by `run --pushgateway`; the second is detached, so its run group
    // can only come from the coordinator, as with a nightly schedule.
    // A dual-stack server for the IPv4 vs IPv6 panel (NAME-ipv4 and NAME-ipv6 of `ipFamily: both`).
    nginx = await startNginx([{ files: { 'index.html': 'ok' }, ipv6: true }]);
    const plan = await writePlan(await everyProbePlan(lab, PLAN, [REGION], Number(new URL(nginx.urls[0]).port)));
    const dir = tempDir('probefleet-e2e-');
    for (const n of [1, 2]) {
      let report: RunReport;
      if (n === 1) {
        const json = path.join(dir, 'run1.json');
        const { code, stderr } = await runCli(['run', plan, ...redis, '--pushgateway', gateway.url, '--json', json], {
          timeoutMs: 180_000,
        });
        assert.equal(code, 0, stderr);
        report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
      } else {
        const runId = `${PLAN}-second-${process.pid}`;
        const submitted = await runCli(['run', plan, ...redis, '--detach', '--run-id', runId]);
        assert.equal(submitted.code, 0, submitted.stderr);
        report = await storedReport(runId, redis);
      }
      reports.push(report);
      const jobs = report.results.length;
      await prometheus.waitFor(
        `max(probefleet_last_run_timestamp_seconds{plan="${PLAN}"})`,
        (v) => v === Date.parse(report.finishedAt) / 1000,
      );
      await prometheus.waitFor(`sum(probefleet_probe_jobs_total{instance="${INSTANCE}"})`, (v) => v === n * jobs);
      await prometheus.waitFor('sum(probefleet_runs_total)', (v) => v === n);
      await prometheus.waitFor(`sum(probefleet_worker_jobs_total{outcome="completed"})`, (v) => v === n * jobs);
    }
    // The coordinator compared the second run with the first and pushed the verdicts.
    await prometheus.waitFor(
      `max(probefleet_comparison_timestamp_seconds{plan="${PLAN}"})`,
      (v) => v === Date.parse(reports[1].finishedAt) / 1000,
    );
  });

  after(async () => {
    await Promise.all([worker?.stop(), coordinator?.stop()]);
    await prometheus?.stop();
    await gateway?.stop();
    await nginx?.stop();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('both runs measured every probe cleanly enough to chart', () => {
    for (const report of reports) {
      assert.deepEqual(report.unfinishedJobs, []);
      assert.ok(
        report.results.every((r) => r.ok || r.probe === 'http2'),
        report.results
          .filter((r) => !r.ok)
          .map((r) => `${r.jobId}: ${r.error?.message}`)
          .join('\n'),
      );
    }
  });

  test('the Pushgateway holds one group per worker process, one per plan and region, one comparison per plan and region, and the run command its own, however many runs', async () => {
    const groups = (await gateway.groups()).map((g) => g.labels).sort((a, b) => a.job.localeCompare(b.job));
    assert.deepEqual(groups, [
      { job: 'probefleet', region: REGION, instance: INSTANCE },
      // `run --pushgateway` (the first run) pushes its own push failures, per instance (the host name).
      { job: 'probefleet_cli', instance: hostname() },
      { job: 'probefleet_compare', plan: PLAN, region: REGION },
      { job: 'probefleet_run', plan: PLAN, region: REGION },
    ]);
  });

  test('the worker serves its own /metrics: jobs taken, push failures, process metrics', async () => {
    const text = await (await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`)).text();
    assert.match(
      text,
      new RegExp(
        `^probefleet_worker_jobs_total\\{region="${REGION}",outcome="completed"\\} ${2 * reports[0].results.length}$`,
        'm',
      ),
    );
    assert.match(text, /^probefleet_push_failures_total\{group="probes"\} 0$/m);
    assert.match(text, /^process_cpu_seconds_total /m);
    assert.doesNotMatch(
      text,
      /probefleet_request_phase_seconds/,
      'probe metrics are pushed, not served: scraped too, they would count twice',
    );
  });

  test('every panel of every dashboard returns data from Prometheus', async () => {
    for (const dashboard of DASHBOARDS) {
      const json = JSON.parse(
        await readFile(path.join(REPO_ROOT, 'dashboards/grafana', `${dashboard.uid}.json`), 'utf8'),
      ) as {
        panels: { title: string; targets: { expr: string; refId: string }[] }[];
        templating: { list: { name: string; query?: unknown }[] };
      };
      for (const panel of json.panels) {
        for (const target of panel.targets) {
          const expr = target.expr.replace(/\$(region|target|window|label)\b/g, (v) => VARIABLE_VALUES[v]);
          const result = await prometheus.query(expr);
          const finite = result.filter((s) => Number.isFinite(Number(s.value[1])));
          assert.ok(
            finite.length > 0,
            `${dashboard.title} / ${panel.title} (${target.refId}) returned no data:\n${expr}\n${JSON.stringify(result)}`,
          );
        }
      }
      for (const variable of json.templating.list) {
        const names = typeof variable.query === 'string' ? variable.query.match(/^label_names\((\w+)\)$/) : null;
        if (names) {
          const series = await prometheus.series(names[1]);
          assert.ok(
            series.some((s) => VARIABLE_VALUES.$label in s),
            `variable ${variable.name}: ${names[1]} has no ${VARIABLE_VALUES.$label} label`,
          );
          continue;
        }
        const match = typeof variable.query === 'string' ? variable.query.match(/^label_values\((.+), (\w+)\)$/) : null;
        if (!match) continue;
        const values = await prometheus.query(`count by (${match[2]}) (${match[1].replace('$region', '.*')})`);
        assert.ok(values.length > 0, `variable ${variable.name} has no values`);
      }
    }
  });

  test('every catalogue metric reached Prometheus, each series with exactly the catalogue labels', async () => {
    const catalogue = buildCatalogue();
    for (const metric of catalogue.metrics) {
      const name = metric.type === 'histogram' ? `${metric.name}_count` : metric.name;
      const series = await prometheus.series(`{__name__="${name}"}`);
      assert.ok(series.length > 0, `${metric.name} is not in Prometheus`);
      const scraped = metric.source.startsWith('scrape:');
      for (const s of series) {
        const labels = Object.keys(s)
          .filter((l) => l !== '__name__')
          .sort();
        const perProbe = s.probe ? catalogue.probes[s.probe]?.[metric.name] : undefined;
        // probefleet_target_info carries the plan's target labels too (examples/metrics-lab.yaml: team).
        const planLabels = metric.planLabels ? [VARIABLE_VALUES.$label] : [];
        const expected = [
          ...(perProbe ?? metric.labels),
          ...planLabels,
          'job',
          ...(scraped ? ['instance'] : []),
        ].sort();
        assert.deepEqual(labels, expected, `${metric.name} ${JSON.stringify(s)}`);
      }
    }
  });

  test('the TLS handshake alert fires for the slow lab server and not for the fast one', async () => {
    const expected = {
      alertname: 'ProbefleetTlsHandshakeSlow',
      region: REGION,
      target: 'slow-tls',
      severity: 'warning',
    };
    const until = Date.now() + 30_000;
    let alerts = await prometheus.alerts();
    while (!alerts.some((a) => a.labels.target === 'slow-tls' && a.state === 'firing') && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      alerts = await prometheus.alerts();
    }
    const handshake = alerts.filter((a) => a.labels.alertname === 'ProbefleetTlsHandshakeSlow');
    assert.deepEqual(
      handshake.map((a) => ({ ...a.labels, state: a.state })),
      [{ ...expected, state: 'firing' }],
    );
    // The fast target is measured and well under the threshold, so its absence means something.
    const fast = await prometheus.query(
      `probefleet_last_run_tls_handshake_seconds{target="https", handshake="full", quantile="0.95"}`,
    );
    assert.equal(fast.length, 1);
    assert.ok(Number(fast[0].value[1]) < 0.5, `https p95 ${fast[0].value[1]} s`);
  });
});
