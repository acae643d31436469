// `probefleet regions ...` end to end: the real binary brings up regions, runs a plan from each
// against the lab on the target host, prints the report and tears down; without root it (and
// `probefleet demo`) says so and exits non-zero; bad region specs are bad input (exit 2); the demo
// without Prometheus says so and runs without metrics.
// The demo itself runs end to end in regions-fidelity.test.ts, and is interrupted in
// regions-cleanup.test.ts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { listNamespaces } from '../../regions/cleanup.js';
import { writePlan } from '../helpers/plans.js';
import { CLI, REPO_ROOT, runCli } from '../helpers/repo.js';
import { regionsSkipReason } from '../helpers/regions.js';
import { tempDir } from '../helpers/temp-dir.js';
import { runAlone } from '../helpers/exclusive.js';

// Measures at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

const skip = regionsSkipReason();

describe('probefleet regions', () => {
  test('regions run: one report with every region, the slower region slower, and nothing left behind', {
    skip,
  }, async (t) => {
    const dir = tempDir('probefleet-regions-cli-');
    t.after(() => rm(dir, { recursive: true, force: true }));
    const plan = path.join(dir, 'plan.yaml');
    const json = path.join(dir, 'run.json');
    await writeFile(
      plan,
      (await readFile(path.join(REPO_ROOT, 'examples/regions-reuse.yaml'), 'utf8')).replace(
        'requests: 20',
        'requests: 5',
      ),
    );
    const { code, stdout, stderr } = await runCli([
      'regions',
      'run',
      plan,
      '--region',
      'near=10ms',
      '--region',
      'far=40ms,10MB/s',
      '--region',
      'lossy=30ms,loss=1%/0.5%,jitter=5ms,seed=9',
      '--json',
      json,
    ]);
    assert.equal(code, 0, stderr);

    assert.match(
      stdout,
      /Emulated regions\n\s+region\s+RTT to target\s+rate limit\s+loss up \/ down\s+jitter\s+seed\s+namespace\s+address/,
    );
    assert.match(stdout, /\n\s+near\s+10 ms\s+-\s+-\s+-\s+-\s+pf-\d+-[0-9a-f]{4}-region-near\s+10\.77\.1\.2\n/);
    assert.match(stdout, /\n\s+far\s+40 ms\s+10 MB\/s\s+-\s+-\s+-\s+pf-\d+-[0-9a-f]{4}-region-far\s+10\.77\.2\.2\n/);
    assert.match(
      stdout,
      /\n\s+lossy\s+30 ms\s+-\s+1% \/ 0\.5%\s+± 5 ms\s+9\s+pf-\d+-[0-9a-f]{4}-region-lossy\s+10\.77\.3\.2\n/,
    );
    assert.match(
      stdout,
      /target host 10\.77\.0\.1 in namespace pf-\d+-[0-9a-f]{4}-target; delay added by (netem|nfqueue)/,
    );
    assert.match(stdout, /New-connection cost/);

    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    assert.deepEqual(report.plan.regions, ['near', 'far', 'lossy']);
    // The plan names lab servers by role; they ran at the target host, on the lab's ports there.
    assert.deepEqual(
      report.plan.targets.map((t) => t.url),
      ['http://10.77.0.1:18170/', 'https://10.77.0.1:18172/'],
    );
    assert.equal(report.results.length, 12);
    assert.ok(
      report.results.every((r) => r.ok),
      JSON.stringify(report.results.filter((r) => !r.ok).map((r) => r.error)),
    );
    for (const target of ['http', 'https']) {
      const cost = (region: string) =>
        report.comparisons.find((c) => c.region === region && c.target === target)!.newConnectionCostMs.median;
      assert.ok(cost('far') > cost('near'), `${target}: far ${cost('far')} ms, near ${cost('near')} ms`);
    }
    const id = /pf-(\d+-[0-9a-f]{4})-target/.exec(stdout)![1];
    assert.deepEqual(
      listNamespaces().filter((ns) => ns.includes(id)),
      [],
      'namespaces left behind',
    );
  });

  test('demo without Prometheus on the PATH: says so, runs the plan without metrics, leaves nothing', {
    skip,
  }, async (t) => {
    const dir = tempDir('probefleet-demo-no-metrics-');
    t.after(() => rm(dir, { recursive: true, force: true }));
    // A PATH with every command of ours but the two.
    const bin = path.join(dir, 'bin');
    await mkdir(bin);
    for (const folder of (process.env.PATH ?? '').split(':').filter((f) => f && existsSync(f))) {
      for (const name of readdirSync(folder)) {
        if (name === 'prometheus' || name === 'prometheus-pushgateway' || existsSync(path.join(bin, name))) continue;
        await symlink(path.join(folder, name), path.join(bin, name));
      }
    }
    const plan = await writePlan(
      'name: no-metrics\ntargets: [{ name: http, url: "lab:keepalive/" }]\nexperiments: [{ probe: reuse, requests: 3, modes: [reused] }]\n',
    );
    t.after(() => rm(path.dirname(plan), { recursive: true, force: true }));
    const { code, stdout, stderr } = await runCli(['demo', plan, '--region', 'solo=5ms'], { env: { PATH: bin } });
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(
      stderr,
      /^demo: no Pushgateway and Prometheus: prometheus and prometheus-pushgateway not found \(apt-get install prometheus prometheus-pushgateway\); running without metrics$/m,
    );
    assert.doesNotMatch(stdout, /^\s+(pushgateway|prometheus)\s+\d+/m);
    assert.doesNotMatch(stdout, /^Metrics:/m);
    // Nothing to warn about in a fleet of its own: its jobs are signed with a key of the demo's,
    // its Redis keeps an append-only file (the fleet's logs at warn and above reach stderr).
    assert.doesNotMatch(stderr, /"level":[4-6]0/, 'no warnings from the fleet');
    assert.match(stdout, /Connection reuse/);
    const id = /pf-(\d+-[0-9a-f]{4})-target/.exec(stdout)![1];
    assert.deepEqual(
      listNamespaces().filter((ns) => ns.includes(id)),
      [],
      'namespaces left behind',
    );
  });

  test('a bad region spec is bad input (exit 2) and creates nothing', async () => {
    // Every parsing rule is in test/unit/regions.test.ts; here, that the CLI says exit 2.
    for (const [command, spec, message] of [
      [['regions', 'run', 'examples/regions-reuse.yaml'], 'near=20parsecs', /is not a time/],
      [['regions', 'run', 'examples/regions-reuse.yaml'], 'Near=20ms', /region name "Near"/],
      [['demo'], 'near=20parsecs', /is not a time/],
      [['regions', 'run', 'examples/regions-reuse.yaml'], 'lossy=20ms,loss=1', /loss "1" is not a percentage/],
      // A spec is shown with its control characters escaped, never as a terminal sequence.
      [
        ['regions', 'run', 'examples/regions-reuse.yaml'],
        'x=1ms,loss=\x1b[31m',
        /loss "\\x1b\[31m" is not a percentage/,
      ],
      [['demo'], 'lossy=20ms,jitter=30ms', /jitter must be 0\.\.20 ms/],
      [
        ['regions', 'run', 'examples/regions-reuse.yaml', '--delay', 'netem'],
        'lossy=20ms,loss=1%',
        /loss and jitter come from the NFQUEUE helper .*; use --delay nfqueue or auto/,
      ],
    ] as const) {
      const { code, stderr } = await runCli([...command, '--region', spec]);
      assert.equal(code, 2, `${command.join(' ')} --region ${spec}: ${stderr}`);
      assert.match(stderr, message);
    }
  });

  test('without root it says so and exits non-zero', async () => {
    // As root, drop to nobody for this one command; otherwise run it as we are.
    const asUser =
      process.getuid?.() === 0
        ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI]
        : [process.execPath, CLI];
    for (const args of [['regions', 'run', 'examples/regions-reuse.yaml'], ['regions', 'cleanup'], ['demo']]) {
      const { code, stderr } = await runAs(asUser, args);
      assert.equal(code, 1, `${args.join(' ')}: ${stderr}`);
      assert.match(stderr, /^probefleet: emulated regions need root: they create network namespaces/);
    }
  });
});

function runAs(command: string[], args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command[0], [...command.slice(1), ...args], { cwd: REPO_ROOT, timeout: 60_000 }, (err, _stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stderr }),
    );
  });
}
