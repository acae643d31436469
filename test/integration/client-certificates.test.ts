// Client certificates (mutual TLS) against Debian's nginx with `ssl_verify_client on` and the
// lab's `mtls` server (Node, which refuses in the handshake): the certificate from a file next to
// the plan, its key as ${file:...} or ${env:...} on the worker, never in a job, a report or a log;
// the tls probe's handshake with and without it; and a clear code when a server wants one.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { runReportSchema, type ProbeResult, type ResultOf, type RunReport } from '../../contracts/result.js';
import { createLabCa, type KeyAndCert } from '../../lab/certs.js';
import { startLab, type Lab } from '../../lab/index.js';
import { executeJob } from '../../worker/execute-job.js';
import type { SecretFileDirs } from '../../worker/secrets.js';
import { needsNginx, startNginx, type Nginx } from '../helpers/nginx.js';
import { jobsOf } from '../helpers/plans.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');

const byTarget = (results: ProbeResult[], target: string, probe = 'reuse') =>
  results.filter((r) => r.target === target && r.probe === probe);

describe('nginx with ssl_verify_client on', needsNginx, () => {
  let nginx: Nginx;
  let dir: string;
  let client: KeyAndCert;
  before(async () => {
    const ca = await createLabCa();
    client = await ca.issue({ hosts: ['probefleet-client'], usage: 'client', subject: { CN: 'probefleet-client' } });
    const server = await ca.issue({ hosts: ['127.0.0.1'] });
    nginx = await startNginx([
      {
        files: {},
        tls: { ...server, clientCa: ca.certPem, verifyClient: 'on' },
        directives: ['location / { default_type text/plain; return 200 "$ssl_client_verify $ssl_client_s_dn"; }'],
      },
    ]);
    dir = tempDir('probefleet-mtls-');
    await writeFile(path.join(dir, 'ca.pem'), ca.certPem);
    await writeFile(path.join(dir, 'client.pem'), client.certPem);
    await writeFile(path.join(dir, 'client.key'), client.keyPem, { mode: 0o600 });
  });
  after(() => nginx?.stop());

  const planFile = async (keyReference: string) => {
    const file = path.join(dir, 'plan.yaml');
    await writeFile(
      file,
      `name: mtls
targets:
  - name: mtls
    url: "${nginx.urls[0]}/"
    tls: { ca: ./ca.pem, cert: ./client.pem, key: "${keyReference}" }
    checks: { bodyMatches: "^SUCCESS CN=probefleet-client$" }
  - name: nocert
    url: "${nginx.urls[0]}/"
    tls: { ca: ./ca.pem }
experiments:
  - { probe: reuse, requests: 3, modes: [reused, new] }
  - { probe: tls, targets: [mtls], samples: 5, versions: ["1.2", "1.3"], resumption: false }
`,
    );
    return file;
  };

  test('the key as ${file:...}: nginx verifies the certificate; without one it answers 400, a failed check', async () => {
    const json = path.join(dir, 'run.json');
    const { code, stdout, stderr } = await runCli([
      'run',
      await planFile(`\${file:${path.join(dir, 'client.key')}}`),
      '--json',
      json,
    ]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /: 2 of 6 jobs failed: 2 RESPONSE_CHECK_FAILED \(exit 1\)$/m);
    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    for (const r of byTarget(report.results, 'mtls')) assert.equal(r.ok, true, JSON.stringify(r.error));
    for (const r of byTarget(report.results, 'nocert')) assert.match(r.error!.message, /status 400, not 2xx/);

    // The tls probe: the handshake with the certificate and, as many times, without it.
    for (const r of byTarget(report.results, 'mtls', 'tls') as ResultOf<'tls'>[]) {
      const c = r.details!.clientCertificate!;
      assert.equal(r.ok, true, JSON.stringify(r.error));
      assert.equal(c.withoutMs?.n, 5, `${r.variant.version}: nginx completes the handshake without one`);
      assert.equal(typeof c.costMs, 'number');
      assert.equal(c.withoutError, null);
    }
    assert.match(stdout, /TLS client certificate: what sending it adds to a full handshake/);
    // The key stays on the machine that runs the job: not in the report or anything printed.
    const keyBody = client.keyPem.split('\n')[1];
    for (const [what, text] of [
      ['report', await readFile(json, 'utf8')],
      ['stdout', stdout],
      ['stderr', stderr],
    ])
      assert.ok(!text.includes(keyBody), `${what} holds no key`);
  });

  test('the key as ${env:...}, and curl as the cold client presents the certificate too', async () => {
    const file = path.join(dir, 'cold.yaml');
    await writeFile(
      file,
      `name: mtls-cold
targets:
  - name: mtls
    url: "${nginx.urls[0]}/"
    tls: { ca: ./ca.pem, cert: ./client.pem, key: "\${env:PF_CLIENT_KEY}" }
experiments: [{ probe: reuse, requests: 2, modes: [cold, reused], client: curl }]
`,
    );
    const { code, stderr } = await runCli(['run', file], { env: { PF_CLIENT_KEY: client.keyPem } });
    assert.equal(code, 0, stderr);
    const unset = await runCli(['run', file], { env: { PF_CLIENT_KEY: '' } });
    assert.equal(unset.code, 1);
    assert.match(
      unset.stdout,
      /SECRET_NOT_SET tls\.key refers to \$\{env:PF_CLIENT_KEY\}, which is not set on this worker/,
    );
    const logged = await nginx.accessLog();
    assert.ok(logged.filter((l) => l.status === 200).length >= 4);
  });
});

describe("the lab's mtls server (refuses in the handshake)", () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab({ log });
  });
  after(() => lab?.close());

  const run = async (yaml: string, secretFileDirs?: SecretFileDirs) => {
    const results: ProbeResult[] = [];
    for (const job of await jobsOf(yaml))
      results.push(await executeJob(job, { region: 'local', log, ...(secretFileDirs ? { secretFileDirs } : {}) }));
    return results;
  };
  const target = (extra: string) =>
    `name: lab-mtls\ntargets:\n  - { name: mtls, url: "${lab.url('mtls')}", tls: { insecure: true${extra} } }\n`;

  test('without a certificate: TLS_CLIENT_CERT_REQUIRED (TLS 1.3 alert 116); with the lab client certificate: measured', async () => {
    const [without] = await run(`${target('')}experiments: [{ probe: reuse, requests: 2, modes: [reused] }]\n`);
    assert.equal(without.error?.code, 'TLS_CLIENT_CERT_REQUIRED', JSON.stringify(without.error));
    const certified = await run(
      `${target(`, cert: "${lab.clientCertFile}", key: "\${file:${lab.clientKeyFile}}"`)}experiments: [{ probe: reuse, requests: 3, modes: [reused, new] }]\n`,
      'any',
    );
    for (const r of certified) assert.equal(r.ok, true, JSON.stringify(r.error));
  });

  test('the tls probe without a certificate: TLS 1.2 ends the handshake (the message says why it may), TLS 1.3 answers certificate_required', async () => {
    const without = (await run(
      `${target('')}experiments: [{ probe: tls, samples: 5, versions: ["1.2", "1.3"], resumption: false }]\n`,
    )) as ResultOf<'tls'>[];
    const [tls12, tls13] = ['1.2', '1.3'].map((v) => without.find((r) => r.variant.version === v)!);
    assert.equal(tls12.error?.code, 'TLS_HANDSHAKE_FAILED');
    assert.match(
      tls12.error!.message,
      /a server that requires a client certificate ends a TLS 1\.2 handshake so when none is sent/,
    );
    // Not a handshake that succeeded: the refusal comes after it, and the probe waits for it once.
    assert.equal(tls13.error?.code, 'TLS_CLIENT_CERT_REQUIRED', JSON.stringify(tls13.error));
    assert.equal(tls13.summary.connectionsOpened, 1, 'asked once: a server that refused refuses every one');
    assert.deepEqual(tls13.findings, [], 'no resumption advice from refused handshakes');

    const withIt = (await run(
      `${target(`, cert: "${lab.clientCertFile}", key: "\${file:${lab.clientKeyFile}}"`)}experiments: [{ probe: tls, samples: 3, versions: ["1.2", "1.3"], resumption: false }]\n`,
      'any',
    )) as ResultOf<'tls'>[];
    for (const r of withIt) {
      assert.equal(r.ok, true, JSON.stringify(r.error));
      // Without it the lab's server refuses: that cost cannot be had there, and the result says why.
      const c = r.details!.clientCertificate!;
      assert.equal(
        c.withoutError?.code,
        r.variant.version === '1.2' ? 'TLS_HANDSHAKE_FAILED' : 'TLS_CLIENT_CERT_REQUIRED',
      );
      assert.equal(c.costMs, null);
    }
  });

  test('a worker reads ${file:...} secrets only under its PROBEFLEET_SECRET_FILE_DIRS', async () => {
    const yaml = `${target(`, cert: "${lab.clientCertFile}", key: "\${file:${lab.clientKeyFile}}"`)}experiments: [{ probe: reuse, requests: 1, modes: [reused] }]\n`;
    const [refused] = await run(yaml, ['/run/secrets']);
    assert.equal(refused.error?.code, 'SECRET_INVALID');
    assert.match(refused.error!.message, /outside the directories this worker reads secrets from \(\/run\/secrets;/);
    const [allowed] = await run(yaml, [path.dirname(lab.clientKeyFile)]);
    assert.equal(allowed.ok, true, JSON.stringify(allowed.error));
  });

  test("a key that is not the certificate's is refused before anything connects", async () => {
    const other = await (await createLabCa()).issue({ hosts: ['x'], usage: 'client' });
    const keyFile = path.join(tempDir('probefleet-key-'), 'other.key');
    await writeFile(keyFile, other.keyPem);
    const before = lab.servers.mtls.connectionsAccepted();
    const [r] = await run(
      `${target(`, cert: "${lab.clientCertFile}", key: "\${file:${keyFile}}"`)}experiments: [{ probe: reuse, requests: 1, modes: [reused] }]\n`,
      'any',
    );
    assert.equal(r.error?.code, 'SECRET_INVALID');
    assert.match(r.error!.message, /tls\.key is not the key of tls\.cert/);
    assert.equal(lab.servers.mtls.connectionsAccepted(), before);
  });
});

describe('client certificates through a worker on Redis', needsRedis, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let worker: CliProcess;
  before(async () => {
    requireRedis();
    lab = await startLab({ log });
    worker = await startWorkerProcess('a', TEST_REDIS_URL, prefix, [], {
      PROBEFLEET_SECRET_FILE_DIRS: path.dirname(lab.clientKeyFile),
    });
  });
  after(async () => {
    await worker?.stop();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('the job carries the certificate and the key reference; the worker reads the key', async () => {
    const file = path.join(tempDir('probefleet-mtls-'), 'plan.yaml');
    await writeFile(
      file,
      `name: mtls-fleet\nregions: [a]\ntargets:\n  - { name: mtls, url: "${lab.url('mtls')}", tls: { insecure: true, cert: "${lab.clientCertFile}", key: "\${file:${lab.clientKeyFile}}" } }\nexperiments: [{ probe: reuse, requests: 2, modes: [reused] }]\n`,
    );
    const expanded = await runCli(['plan', 'expand', file, '--json']);
    assert.equal(expanded.code, 0, expanded.stderr);
    assert.match(expanded.stdout, /"key":"\$\{file:[^"]+lab-client\.key\}"/, 'the job holds the reference');
    assert.ok(!expanded.stdout.includes('PRIVATE KEY'), 'and no key');
    const { code, stderr } = await runCli(['run', file, '--redis', TEST_REDIS_URL, '--prefix', prefix], {
      timeoutMs: 60_000,
    });
    assert.equal(code, 0, stderr);
  });
});
