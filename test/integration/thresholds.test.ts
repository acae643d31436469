// A plan's thresholds through the real CLI against the lab: checked in the run report (every
// format), breached ones exit 5 after the report is printed; a bad threshold is bad input.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { EXIT_THRESHOLD_BREACHED } from '../../cli/exit-codes.js';
import { runReportSchema } from '../../contracts/result.js';
import { writePlan } from '../helpers/plans.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

// Bounds no run can meet (a request in under a nanosecond) or miss (one within 100 s, every one
// answered), so the verdicts do not depend on how busy the machine is.
const plan = (extra = '') => `
name: slo
targets: [{ name: http, url: "lab:keepalive/" }]
experiments: [{ probe: reuse, requests: 10, modes: [reused, new] }]
thresholds:
  - { name: instant, quantity: phase_total_p50, max: 0.000001, targets: [http] }
  - { quantity: new_connection_cost, max: 100000 }
  - { quantity: success_ratio, min: 0.99 }
${extra}`;

test('a breached threshold: the report says which, in every format, and run exits 5 after printing it', async () => {
  const dir = tempDir('probefleet-thresholds-');
  const json = path.join(dir, 'run.json');
  const md = path.join(dir, 'run.md');
  const csv = path.join(dir, 'run.csv');
  const run = await runCli(['run', '--lab', await writePlan(plan()), '--json', json, '--markdown', md, '--csv', csv]);
  assert.equal(run.code, EXIT_THRESHOLD_BREACHED, run.stderr);
  assert.match(
    run.stderr,
    /run \S+: 2 of 5 threshold checks breached: instant \(local http reuse reused http: [\d.]+ > 0\.000001\), instant \(local http reuse new http: [\d.]+ > 0\.000001\) \(exit 5\)\n/,
  );
  const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8')));
  // One check per job the threshold applies to; the new-connection cost once per region and target.
  assert.deepEqual(
    report.thresholds.checks.map((c) => [c.threshold, c.breached]),
    [
      ['instant', true],
      ['instant', true],
      ['new_connection_cost', false],
      ['success_ratio', false],
      ['success_ratio', false],
    ],
  );
  assert.match(run.stdout, /Thresholds\n.*\n.*\n\s+breached\s+instant\s+total p50\s+local http reuse reused http/);
  assert.match(await readFile(md, 'utf8'), /^## Thresholds$/m);
  assert.match(await readFile(csv, 'utf8'), /,breached,.*,instant,phase_total_p50,/);
});

test('thresholds that hold: exit 0; the report says how many were checked', async () => {
  const run = await runCli(['run', '--lab', await writePlan(plan().replace('max: 0.000001', 'max: 100000'))]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /Thresholds\n/);
});

test('a threshold naming an unknown region, a share over 1, a repeated name: exit 2, nothing runs', async () => {
  const bad = await runCli([
    'plan',
    'validate',
    await writePlan(
      plan(`  - { quantity: handshake_full_p95, max: 150, regions: [eu-west] }
  - { quantity: error_rate, max: 5 }
  - { name: instant, quantity: error_rate, max: 0.5 }`),
    ),
  ]);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /thresholds\.3\.regions\.0|thresholds\[3\]\.regions\[0\]/);
  assert.match(bad.stderr, /unknown region "eu-west"/);
  assert.match(bad.stderr, /error_rate is a share from 0 to 1 \(99% is 0\.99\), got 5/);
  assert.match(bad.stderr, /goes by the name "instant" too/);
});
