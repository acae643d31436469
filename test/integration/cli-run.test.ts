// The README's first command, end to end: the real binary, the real lab, the example plan.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { runReportSchema, type ResultOf, type RunReport } from '../../contracts/result.js';
import { writePlan } from '../helpers/plans.js';
import { freePort } from '../helpers/redis.js';
import { spawnCli } from '../helpers/processes.js';
import { REPO_ROOT, runCli } from '../helpers/repo.js';
import { EXIT_CODE_MEANINGS } from '../../cli/exit-codes.js';
import { tempDir } from '../helpers/temp-dir.js';

test('probefleet run --lab examples/lecture-keepalive.yaml prints the table and writes the run JSON', async () => {
  const dir = tempDir('probefleet-run-');
  const json = path.join(dir, 'run.json');
  // REDIS_URL empty: embedded even where the environment names a Redis.
  const { code, stdout, stderr } = await runCli(['run', '--lab', 'examples/lecture-keepalive.yaml', '--json', json], {
    timeoutMs: 300_000,
    env: { REDIS_URL: '' },
  });
  assert.equal(code, 0, stderr);

  const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
  assert.equal(report.schema, 'probefleet.run/v1');
  assert.equal(report.mode, 'embedded');
  assert.equal(report.results.length, 8);
  assert.ok(
    report.results.every((r) => r.ok && r.region === 'local'),
    'every job measured',
  );

  const row = (target: string, mode: string) =>
    report.results.find((r) => r.target === target && r.probe === 'reuse' && r.variant.mode === mode)!;
  assert.equal(row('http', 'reused').summary.connectionsOpened, 1);
  assert.equal(row('http', 'new').summary.connectionsOpened, 200);
  assert.equal(row('http', 'cold').summary.connectionsOpened, 200);
  assert.equal(row('https', 'reused').summary.connectionsOpened, 1);
  assert.equal(row('https', 'new').summary.connectionsOpened, 200);
  // The shape the HTTP performance lecture found (docs/probes.md#sources): HTTPS pays for its handshakes,
  // a process per request pays most.
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
  const dir = tempDir('probefleet-run-');
  const json = path.join(dir, 'run.json');
  const { code, stderr } = await runCli(['run', 'test/fixtures/plans/bad/unknown-probe.yaml', '--json', json]);
  assert.equal(code, 2);
  assert.match(stderr, /bad\/unknown-probe\.yaml:8:12: experiments\[0\]\.probe/);
  assert.equal(existsSync(json), false);
});

test('unknown options are refused with exit 2', async () => {
  const { code, stderr } = await runCli(['run', 'examples/lecture-keepalive.yaml', '--no-such-option']);
  assert.equal(code, 2);
  assert.match(stderr, /Unknown argument/);
});

test("probefleet run --lab examples/lecture-http2.yaml reproduces the lecture's HTTP/2 section", async () => {
  const dir = tempDir('probefleet-run-');
  const json = path.join(dir, 'run.json');
  const { code, stdout, stderr } = await runCli(['run', '--lab', 'examples/lecture-http2.yaml', '--json', json], {
    timeoutMs: 120_000,
  });
  assert.equal(code, 0, stderr);
  const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
  assert.ok(
    report.results.every((r) => r.ok),
    JSON.stringify(report.results.map((r) => r.error)),
  );
  const details = (target: string) =>
    (report.results.find((r) => r.probe === 'http2' && r.target === target) as ResultOf<'http2'>).details!;

  // h1.1 vs h2 header bytes for the same request: HPACK on the first request, indexes on repeats.
  const h2 = details('h2');
  for (const side of ['request', 'response'] as const) {
    assert.ok(h2.h2HeaderBytesRepeat![side] < h2.h2HeaderBytesFirst![side], side);
    assert.ok(h2.h2HeaderBytesFirst![side] < h2.h1HeaderBytes![side], side);
  }
  // The plain HTTP/1.1 server: the upgrade ignored, prior knowledge refused.
  assert.deepEqual(details('h1').h2cUpgrade, {
    supported: false,
    outcome: 'http1',
    answer: 'answered HTTP/1.1 200, ignored the upgrade',
  });
  assert.equal(details('h1').h2cPriorKnowledge?.supported, false);
  assert.equal(details('h2c').h2cPriorKnowledge?.supported, true);
  assert.deepEqual(report.findings.map((f) => `${f.code} ${f.target}`).sort(), [
    'H2C_UNSUPPORTED h1',
    'H2_NOT_NEGOTIATED h1-tls',
    'HTTP1_ONLY_MANY_CONNECTIONS h1',
    'HTTP1_ONLY_MANY_CONNECTIONS h1-tls',
  ]);
  assert.match(stdout, /HTTP\/1\.1 vs HTTP\/2: header bytes per request/);
  assert.match(stdout, /local h1, Upgrade: h2c: answered HTTP\/1\.1 200, ignored the upgrade/);
  assert.match(stdout, /Concurrent requests: HTTP\/1\.1/);
});

test('probefleet run --lab examples/tls-handshakes.yaml measures both versions and names what the lab servers lack', async () => {
  const dir = tempDir('probefleet-run-');
  const json = path.join(dir, 'run.json');
  const { code, stdout, stderr } = await runCli(['run', '--lab', 'examples/tls-handshakes.yaml', '--json', json], {
    timeoutMs: 120_000,
  });
  // The TLS 1.2-only server's TLS 1.3 job fails, as it should: the run says so and exits 1.
  assert.equal(code, 1, stderr);
  assert.match(stderr, /: 1 of 9 jobs failed: 1 TLS_VERSION_UNSUPPORTED \(exit 1\)$/m);
  const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
  const tls = report.results.filter((r): r is ResultOf<'tls'> => r.probe === 'tls');
  assert.equal(tls.length, 9);
  const https13 = tls.find((r) => r.target === 'https' && r.variant.version === '1.3')!;
  assert.equal(https13.details?.tlsVersion, 'TLSv1.3');
  assert.deepEqual(https13.details?.resumption, { attempted: 30, sessionsOffered: 30, resumed: 30 });
  assert.deepEqual(
    report.findings.map((f) => `${f.code} ${f.target} ${String(f.data.tlsVersion ?? '')}`.trim()).sort(),
    [
      'CERT_EXPIRED expired',
      'NO_SESSION_RESUMPTION no-resume 1.2',
      'NO_SESSION_RESUMPTION no-resume 1.3',
      'TLS13_UNAVAILABLE tls12',
    ],
  );
  assert.match(stdout, /TLS handshakes: full/);
  assert.match(stdout, /local\s+tls12\s+1\.2\s+TLSv1\.2/);
});

describe('a REDIS_URL in the shell', () => {
  /** A port nothing listens on: were the run to use this Redis, it would wait and exit 4. */
  const nowhere = async () => `redis://127.0.0.1:${await freePort()}`;
  const plan = () =>
    writePlan(
      'name: env-redis\ntargets: [{ name: http, url: "lab:keepalive/" }]\nexperiments: [{ probe: reuse, requests: 3, modes: [reused] }]\n',
    );

  test('does not turn run --lab into a submit: it runs embedded and says the variable was not used', async () => {
    const { code, stdout, stderr } = await runCli(['run', '--lab', await plan()], {
      env: { REDIS_URL: await nowhere(), PROBEFLEET_REDIS_TIMEOUT_SECONDS: '0.5' },
    });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^run env-redis-\S+ \(embedded\), plan env-redis, 1 job$/m);
    assert.match(stderr, /^run: --lab runs embedded, in this process; REDIS_URL is set and not used/m);
  });

  test('is used without --lab, and a Redis that does not answer is named as coming from it', async () => {
    const file = await plan();
    const url = await nowhere();
    const { code, stderr } = await runCli(['run', file, '--lab-at', '127.0.0.1:18170', '--redis-timeout', '0.5'], {
      env: { REDIS_URL: url },
    });
    assert.equal(code, 4, stderr);
    assert.match(
      stderr,
      /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: .*; the URL is REDIS_URL from the environment/,
    );
  });
});

describe('exit codes a scheduler can trust', () => {
  const refusedPlan = async (url: string) =>
    writePlan(
      `name: exit-codes\ntargets:\n  - { name: up, url: "lab:keepalive/" }\n  - { name: down, url: "${url}" }\n` +
        'experiments: [{ probe: reuse, requests: 3, modes: [reused] }]\n',
    );

  test('a target that refuses connections: exit 1, and one line says how many jobs failed and why', async () => {
    const { code, stdout, stderr } = await runCli([
      'run',
      '--lab',
      await refusedPlan(`http://127.0.0.1:${await freePort()}/`),
    ]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /^run exit-codes-\S+: 1 of 2 jobs failed: 1 CONNECTION_REFUSED \(exit 1\)$/m);
    assert.match(stdout, /local\s+down\s+reused\s+3\s.*\s3$/m);
  });

  test('a target the policy refuses counts as failed, not as "0 errors"', async () => {
    // Loopback permission off: the policy's decision, made before anything connects.
    const { code, stdout, stderr } = await runCli([
      'run',
      '--lab',
      '--allow-loopback=false',
      await refusedPlan('http://127.0.0.1:9/'),
    ]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /: 2 of 2 jobs failed: 2 TARGET_REFUSED_BY_POLICY \(exit 1\)$/m);
    assert.match(stdout, /local\s+down\s+reused\s+0\s.*\snot run$/m);
    assert.doesNotMatch(stdout, /\s0$/m, 'no job reads as 0 errors');
  });

  test('every job measured: exit 0 and no failure line; --json - gives stdout to the JSON alone', async () => {
    const { code, stdout, stderr } = await runCli(['run', '--lab', await refusedPlan('lab:keepalive/'), '--json', '-']);
    assert.equal(code, 0, stderr);
    assert.doesNotMatch(stderr, /jobs? failed/);
    assert.equal(runReportSchema.parse(JSON.parse(stdout)).results.length, 2, 'stdout is one JSON document');
    assert.match(stderr, /^run exit-codes-\S+ \(embedded\)/m, 'the text report went to stderr');
  });

  test('Ctrl-C: exit 130, the jobs stopped, not "failed"', async () => {
    const plan = await writePlan(
      'name: interrupted\ntargets: [{ name: http, url: "lab:keepalive/" }]\n' +
        'experiments: [{ probe: reuse, requests: 10000, modes: [new] }]\n',
    );
    const run = spawnCli(['run', '--lab', plan, '--log-level', 'debug'], { REDIS_URL: '' });
    await run.waitFor(/"msg":"probe starting"/, 60_000);
    assert.equal(await run.stop('SIGINT'), 130, run.stderr());
    assert.doesNotMatch(run.stderr(), /jobs? failed/);
  });

  test('a second Ctrl-C at once: exit 130, and --json is written or named as not written, never skipped silently', async () => {
    const plan = await writePlan(
      'name: interrupted\ntargets: [{ name: http, url: "lab:keepalive/" }]\n' +
        'experiments: [{ probe: reuse, requests: 10000, modes: [new] }]\n',
    );
    const json = path.join(tempDir('probefleet-ctrl-c-'), 'run.json');
    const run = spawnCli(['run', '--lab', plan, '--log-level', 'debug', '--json', json], { REDIS_URL: '' });
    await run.waitFor(/"msg":"probe starting"/, 60_000);
    run.child.kill('SIGINT');
    await run.waitFor(/stopping the run: its report follows \(Ctrl-C again to quit at once without it\)/);
    const code = await run.stop('SIGINT');
    const written = await readFile(json, 'utf8').then(
      (text) => runReportSchema.parse(JSON.parse(text)),
      () => undefined,
    );
    // A run cut by the first Ctrl-C may be done and tearing down (Node's signal handlers already
    // gone) when the second arrives: it then ends by SIGINT, which a shell shows as 130, and only
    // once its report is written whole.
    if (code !== 130) assert.ok(written && run.child.signalCode === 'SIGINT', `exit ${code}:\n${run.stderr()}`);
    if (!written)
      assert.match(run.stderr(), new RegExp(`second Ctrl-C: quitting at once; not written: --json ${json}`));
  });
});

test('--help ends with every exit code, and the README lists the same ones', async () => {
  const { stdout } = await runCli(['run', '--help']);
  const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const inReadme = [...readme.matchAll(/^\| (\d+) \| /gm)].map((m) => Number(m[1]));
  assert.deepEqual(
    inReadme,
    EXIT_CODE_MEANINGS.map(([code]) => code),
  );
  for (const [code, meaning] of EXIT_CODE_MEANINGS)
    assert.ok(stdout.includes(`${code}  ${meaning}`), `${code} in --help`);
});
