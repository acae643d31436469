// The Prometheus alert rules with promtool: they load, and the unit tests in
// dashboards/alerts/probefleet.rules.test.yml make each alert fire and not fire.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { needsPrometheus, PROMETHEUS_BINARIES, requirePrometheus } from '../helpers/prometheus.js';
import { REPO_ROOT } from '../helpers/repo.js';
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
