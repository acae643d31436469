// The README's first command, end to end: the real binary, the real lab, the example plan.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { runCli } from '../helpers/repo.js';

test('probefleet run --lab examples/lecture-keepalive.yaml prints the table and writes the run JSON', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-run-'));
  const json = path.join(dir, 'run.json');
  // REDIS_URL empty: embedded even where the environment names a Redis.
  const { code, stdout, stderr } = await runCli(['run', '--lab', 'examples/lecture-keepalive.yaml', '--json', json], { timeoutMs: 300_000, env: { REDIS_URL: '' } });
  assert.equal(code, 0, stderr);

  const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
  assert.equal(report.schema, 'probefleet.run/v1');
  assert.equal(report.mode, 'embedded');
  assert.equal(report.results.length, 8);
  assert.ok(report.results.every((r) => r.ok && r.region === 'local'), 'every job measured');

  const row = (target: string, mode: string) => report.results.find((r) => r.target === target && r.probe === 'reuse' && r.variant.mode === mode)!;
  assert.equal(row('http', 'reused').summary.connectionsOpened, 1);
  assert.equal(row('http', 'new').summary.connectionsOpened, 200);
  assert.equal(row('http', 'cold').summary.connectionsOpened, 200);
  assert.equal(row('https', 'reused').summary.connectionsOpened, 1);
  assert.equal(row('https', 'new').summary.connectionsOpened, 200);
  // The shape the lecture found: HTTPS pays for its handshakes, a process per request pays most.
  assert.ok(row('https', 'new').summary.durationMs > row('https', 'reused').summary.durationMs);
  assert.ok(row('http', 'cold').summary.durationMs > row('http', 'new').summary.durationMs);

  const https = report.comparisons.find((c) => c.target === 'https')!;
  assert.ok(https.newConnectionCostMs.median > 0 && https.newConnectionCostMs.ci95[0] > 0, JSON.stringify(https));
  assert.deepEqual(report.findings.map((f) => `${f.code} ${f.target}`).sort(), [
    'NAGLE_DELAYED_ACK_STALL nagle',
    'SERVER_CLOSES_EVERY_CONNECTION php-like',
  ]);

  assert.match(stdout, /region\s+target\s+mode\s+requests\s+new conns\s+total\s+median\/req\s+p95\/req/);
  assert.match(stdout, /local\s+https\s+new\s+200\s+200\s/);
  assert.match(stdout, /New-connection cost/);
  assert.match(stdout, /Decision table/);
});

test('a plan that fails validation runs nothing and writes nothing', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-run-'));
  const json = path.join(dir, 'run.json');
  const { code, stderr } = await runCli(['run', 'test/fixtures/plans/invalid-unknown-probe.yaml', '--json', json]);
  assert.equal(code, 2);
  assert.match(stderr, /invalid-unknown-probe\.yaml:6:12: experiments\[0\]\.probe/);
  assert.equal(existsSync(json), false);
});

test('unknown options are refused with exit 2', async () => {
  const { code, stderr } = await runCli(['run', 'examples/lecture-keepalive.yaml', '--no-such-option']);
  assert.equal(code, 2);
  assert.match(stderr, /Unknown argument/);
});
