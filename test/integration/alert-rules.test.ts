// The Prometheus alert rules with promtool: they load, and the unit tests in
// dashboards/alerts/probefleet.rules.test.yml make each alert fire and not fire.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { needsPrometheus, PROMETHEUS_BINARIES, requirePrometheus } from '../helpers/prometheus.js';
import { REPO_ROOT, runCli } from '../helpers/repo.js';
import { writePlan } from '../helpers/plans.js';
import { tempDir } from '../helpers/temp-dir.js';
import { parse } from 'yaml';
import { ALERTS } from '../../dashboards/src/alerts.js';

const ALERTS_DIR = path.join(REPO_ROOT, 'dashboards/alerts');

function promtool(args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(PROMETHEUS_BINARIES.promtool, args, { cwd, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: stdout + stderr });
    });
  });
}

test('promtool check rules: the rule file is valid', needsPrometheus, async () => {
  requirePrometheus();
  const { code, output } = await promtool(['check', 'rules', 'probefleet.rules.yml'], ALERTS_DIR);
  assert.equal(code, 0, output);
  assert.match(output, new RegExp(`SUCCESS: ${ALERTS.length} rules found`));
});

test('promtool test rules: every alert fires for its series and not for the others', needsPrometheus, async () => {
  requirePrometheus();
  const { code, output } = await promtool(['test', 'rules', 'probefleet.rules.test.yml'], ALERTS_DIR);
  assert.equal(code, 0, output);
  assert.match(output, /SUCCESS/);
});

test('promtool check config: the example Prometheus configuration is valid', needsPrometheus, async () => {
  requirePrometheus();
  const { code, output } = await promtool(
    ['check', 'config', '--syntax-only', 'prometheus.yml'],
    path.join(REPO_ROOT, 'dashboards/prometheus'),
  );
  assert.equal(code, 0, output);
});

/** A plan with thresholds and its own value for one fixed alert, as `probefleet alerts` takes it. */
const SLO_PLAN = `
name: nightly-slo
regions: [eu-west, us-east]
targets: [{ name: api, url: "https://127.0.0.1:9/" }]
experiments:
  - { probe: reuse, requests: 30, modes: [reused, new] }
  - { probe: tls, samples: 80 }
thresholds:
  - { name: tls-p95-eu, quantity: handshake_full_p95, max: 150, regions: [eu-west] }
  - { quantity: success_ratio, min: 0.99 }
alerts: { handshakeP95Ms: 300 }
`;

const series = (name: string, labels: Record<string, string>, values: string) =>
  `      - series: '${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(', ')}}'\n        values: '${values}'`;

test(
  'probefleet alerts PLAN: promtool loads the rules, and they fire for the plan at its own thresholds and for other plans at the defaults',
  needsPrometheus,
  async () => {
    requirePrometheus();
    const dir = tempDir('probefleet-alerts-');
    const rules = path.join(dir, 'rules.yml');
    const grafana = path.join(dir, 'grafana.yml');
    const made = await runCli(['alerts', await writePlan(SLO_PLAN), '--prometheus', rules, '--grafana', grafana]);
    assert.equal(made.code, 0, made.stderr);
    const checked = await promtool(['check', 'rules', 'rules.yml'], dir);
    assert.equal(checked.code, 0, checked.output);
    // 6 fixed alerts for the plan, one per bound of its 2 thresholds, 6 for every other plan.
    assert.match(checked.output, /SUCCESS: 14 rules found/);
    const threshold = { plan: 'nightly-slo', target: 'api', probe: 'tls', variant: '1.3' };
    const handshake = { target: 'api', handshake: 'full', quantile: '0.95', tls_version: '1.3' };
    const input = [
      // 200 ms from eu-west: over the plan's 150 ms; the same from us-east is not bounded there.
      series(
        'probefleet_threshold_value',
        { ...threshold, region: 'eu-west', threshold: 'tls-p95-eu', quantity: 'handshake_full_p95' },
        '0.2x30',
      ),
      series(
        'probefleet_threshold_value',
        { ...threshold, region: 'us-east', threshold: 'success_ratio', quantity: 'success_ratio' },
        '0.995x30',
      ),
      // 400 ms p95: over the plan's own 300 ms; another plan's 400 ms is under the default 500 ms, its 600 ms is not.
      series(
        'probefleet_last_run_tls_handshake_seconds',
        { ...handshake, plan: 'nightly-slo', region: 'eu-west' },
        '0.4x30',
      ),
      series('probefleet_last_run_tls_handshake_seconds', { ...handshake, plan: 'other', region: 'eu-west' }, '0.4x30'),
      series('probefleet_last_run_tls_handshake_seconds', { ...handshake, plan: 'other', region: 'us-east' }, '0.6x30'),
    ].join('\n');
    const description = (from: string, value: string, threshold: number) =>
      `The p95 of full TLS handshakes from ${from} to api was ${value} in the last run (threshold ${threshold} ms). Dashboard: probefleet / Regional connection cost.`;
    await writeFile(
      path.join(dir, 'rules.test.yml'),
      `rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
${input}
    alert_rule_test:
      - eval_time: 15m
        alertname: ProbefleetThresholdBreached
        exp_alerts:
          - exp_labels: { severity: warning, plan: nightly-slo, threshold: tls-p95-eu, region: eu-west, target: api, probe: tls, variant: '1.3' }
            exp_annotations:
              summary: handshake full p95 from eu-west to api above the threshold tls-p95-eu
              description: "The last run of plan nightly-slo measured handshake full p95 of tls 1.3 from eu-west to api at 200ms: the plan's threshold tls-p95-eu says max 150 ms (docs/thresholds.md)."
      - eval_time: 20m
        alertname: ProbefleetTlsHandshakeSlow
        exp_alerts:
          - exp_labels: { severity: warning, plan: nightly-slo, region: eu-west, target: api }
            exp_annotations:
              summary: Slow TLS handshakes from eu-west to api
              description: '${description('eu-west', '400ms', 300)}'
          - exp_labels: { severity: warning, plan: other, region: us-east, target: api }
            exp_annotations:
              summary: Slow TLS handshakes from us-east to api
              description: '${description('us-east', '600ms', 500)}'
`,
    );
    const tested = await promtool(['test', 'rules', 'rules.test.yml'], dir);
    assert.equal(tested.code, 0, tested.output);
    // Grafana: the same rules, uids of at most 40 characters and titles unique, as provisioning needs.
    const provisioned = parse(await readFile(grafana, 'utf8')) as {
      groups: { rules: { uid: string; title: string; data: { model: { expr?: string } }[] }[] }[];
    };
    const all = provisioned.groups.flatMap((g) => g.rules);
    assert.equal(all.length, 14);
    assert.ok(
      all.every((r) => r.uid.length <= 40),
      all.map((r) => r.uid).join(' '),
    );
    assert.equal(new Set(all.map((r) => r.uid)).size, all.length);
    assert.equal(new Set(all.map((r) => r.title)).size, all.length);
    assert.match(
      all.find((r) => r.title === 'ProbefleetThresholdBreached nightly-slo tls-p95-eu max')!.data[0].model.expr!,
      /probefleet_threshold_value\{plan="nightly-slo", threshold="tls-p95-eu"\}/,
    );
  },
);
