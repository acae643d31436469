// The target policy end to end, on loopback with the loopback permission off: every probe's job
// becomes a TARGET_REFUSED_BY_POLICY result and the lab sees no connection; the connectors refuse
// a name that resolves to a refused address, at each connection's own lookup, and connect to the
// address they checked; a worker process refuses loopback unless started with --allow-loopback.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PROBE_KINDS } from '../../contracts/probes/index.js';
import { runReportSchema, type ResultOf, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { startLab, type Lab } from '../../lab/index.js';
import { executeJob } from '../../worker/execute-job.js';
import { TimedConnector } from '../../worker/http/connector.js';
import { generateLoad } from '../../worker/http/load-generator.js';
import { TargetPolicy, TargetRefusedError } from '../../worker/target-policy.js';
import { labDnsQueries } from '../helpers/lab.js';
import { jobsOf, writePlan } from '../helpers/plans.js';
import { spawnCli, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');
const noLoopback = new TargetPolicy({ allowLoopback: false, allowTargets: [] });
/** Resolves the made-up name lab.example to loopback: a name whose address the policy refuses, without real DNS. */
const labDotExample = async (host: string) => {
  assert.equal(host, 'lab.example');
  return { address: '127.0.0.1' };
};

/** A name the lab's DNS server answers. */
const DNS_NAME = 'refused.lab.probefleet.test';

function connectionsTo(lab: Lab): number {
  return Object.values(lab.servers).reduce((sum, s) => sum + s.connectionsAccepted(), 0);
}

describe('target policy against the lab, loopback permission off', () => {
  let lab: Lab;
  before(async () => (lab = await startLab({ log })));
  after(async () => lab?.close());

  test('every probe kind: a TARGET_REFUSED_BY_POLICY result naming the rule, and no connection', async () => {
    // The dns probe sends to its resolver, not the target: the lab's DNS server, refused the same way.
    const experiments = PROBE_KINDS.map((kind) =>
      kind === 'dns'
        ? `  - { probe: dns, targets: [name], resolvers: ["127.0.0.1:${lab.servers.dns.port}"] }`
        : `  - { probe: ${kind}, targets: [https]${kind === 'load' ? ', durationSeconds: 0.5' : ''} }`,
    ).join('\n');
    const jobs = await jobsOf(`
name: refused
targets:
  - { name: https, url: "${lab.url('https')}", tls: { insecure: true } }
  - { name: name, url: "http://${DNS_NAME}/" }
experiments:
${experiments}
`);
    assert.deepEqual(new Set(jobs.map((j) => j.probe)), new Set(PROBE_KINDS));
    for (const job of jobs) {
      const result = await executeJob(job, { region: 'local', log, targetPolicy: noLoopback });
      assert.equal(result.ok, false, job.jobId);
      assert.equal(result.error?.code, 'TARGET_REFUSED_BY_POLICY', job.jobId);
      assert.match(
        result.error!.message,
        /^127\.0\.0\.1 is loopback \(127\.0\.0\.0\/8\): allowed only with --allow-loopback$/,
      );
    }
    assert.equal(connectionsTo(lab), 0);
    assert.equal(await labDnsQueries(lab, DNS_NAME), 0, 'the lab DNS server saw no query');
  });

  test("a name that resolves somewhere allowed first and somewhere refused next (DNS rebinding) is judged at each connection's own lookup", async () => {
    let lookups = 0;
    // Loopback allowed, private refused: the first connection's lookup answers the lab, the later ones a private address.
    const rebinding = new TargetPolicy({ allowLoopback: true, allowTargets: [] }, async () => ({
      address: lookups++ === 0 ? '127.0.0.1' : '10.1.2.3',
    }));
    const before = connectionsTo(lab);
    const [job] = await jobsOf(`
name: rebinding
targets: [{ name: http, url: "http://rebind.example:${lab.servers.keepalive.port}/" }]
experiments: [{ probe: reuse, requests: 5, modes: [new] }]
`);
    const result = await executeJob(job, { region: 'local', log, targetPolicy: rebinding });
    // The sequence stops after a few failures in a row: every request it made opened a connection.
    assert.equal(lookups, result.summary.requests, 'one lookup per connection, and none before the probe');
    assert.equal(result.summary.requests - result.summary.errors, 1, 'the first, to the lab, answered');
    assert.equal(connectionsTo(lab), before + 1);
    assert.deepEqual(result.resolution?.answers, [['127.0.0.1'], ['10.1.2.3']]);
    const refused = (result as ResultOf<'reuse'>).details!.samples.filter((s) => s.error);
    assert.ok(refused.length >= 1);
    assert.deepEqual(
      refused.map((s) => s.error!.code),
      Array(refused.length).fill('TARGET_REFUSED_BY_POLICY'),
    );
    assert.match(refused[0].error!.message, /10\.1\.2\.3 \(rebind\.example\) is private/);
  });

  test('the connectors check the address a name resolved to, and connect to that address', async () => {
    const port = lab.servers.keepalive.port;
    const before = connectionsTo(lab);
    const refusing = new TargetPolicy({ allowLoopback: false, allowTargets: [] }, labDotExample);
    const connector = new TimedConnector({
      resumeTlsSessions: false,
      alpn: ['http/1.1'],
      timeoutMs: 5_000,
      policy: refusing,
    });
    await assert.rejects(
      connector.open('lab.example', port, false),
      (err: Error) =>
        err instanceof TargetRefusedError && /127\.0\.0\.1 \(lab\.example\) is loopback/.test(err.message),
    );
    const load = await generateLoad({
      url: `http://lab.example:${port}/`,
      mode: 'reused',
      connections: 2,
      streams: 1,
      durationMs: 300,
      timeoutMs: 5_000,
      tlsResume: false,
      signal: AbortSignal.timeout(10_000),
      policy: refusing,
    });
    assert.equal(load.completed, 0);
    assert.ok((load.errors.TARGET_REFUSED_BY_POLICY ?? 0) > 0, JSON.stringify(load.errors));
    assert.equal(connectionsTo(lab), before);

    // Allowed, the same made-up name reaches the lab: the connection went to the address the policy gave.
    const allowing = new TargetPolicy({ allowLoopback: true, allowTargets: [] }, labDotExample);
    const socket = await new TimedConnector({
      resumeTlsSessions: false,
      alpn: ['http/1.1'],
      timeoutMs: 5_000,
      policy: allowing,
    }).open('lab.example', port, false);
    assert.equal(socket.remoteAddress, '127.0.0.1');
    socket.destroy();
    const loaded = await generateLoad({
      url: `https://lab.example:${lab.servers.https.port}/`,
      tls: { insecure: true },
      mode: 'reused',
      connections: 1,
      streams: 1,
      durationMs: 10_000,
      maxRequests: 5,
      timeoutMs: 5_000,
      tlsResume: false,
      signal: AbortSignal.timeout(10_000),
      policy: allowing,
    });
    assert.equal(loaded.completed, 5, JSON.stringify(loaded.errors));
  });

  test('probefleet run (embedded) allows loopback by default; --no-allow-loopback refuses it', async () => {
    const plan = await writePlan(`
name: embedded-policy
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 2, modes: [reused] }]
`);
    const before = lab.servers.keepalive.connectionsAccepted();
    const refused = await runCli(['run', plan, '--no-allow-loopback'], { env: { REDIS_URL: '' } });
    assert.equal(refused.code, 1, `a job refused by the policy fails the run\n${refused.stderr}`);
    assert.match(refused.stdout, /TARGET_REFUSED_BY_POLICY/);
    assert.match(refused.stderr, /: 1 of 1 job failed: 1 TARGET_REFUSED_BY_POLICY \(exit 1\)$/m);
    assert.equal(lab.servers.keepalive.connectionsAccepted(), before);
    const allowed = await runCli(['run', plan], { env: { REDIS_URL: '' } });
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.equal(lab.servers.keepalive.connectionsAccepted(), before + 1);
    const bad = await runCli(['run', plan, '--allow-targets', '10.0.0.0/33'], { env: { REDIS_URL: '' } });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--allow-targets: "10\.0\.0\.0\/33" is neither a CIDR/);
  });
});

describe('a worker process refuses loopback targets unless allowed', needsRedis, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let worker: CliProcess | undefined;

  before(async () => {
    requireRedis();
    lab = await startLab({ log });
  });
  after(async () => {
    await worker?.stop();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('probefleet worker without --allow-loopback: the run reports TARGET_REFUSED_BY_POLICY and the lab saw nothing', async () => {
    worker = spawnCli(['worker', '--region', 'a', '--redis', TEST_REDIS_URL, '--prefix', prefix], {
      PROBEFLEET_ALLOW_LOOPBACK: '',
    });
    await worker.waitFor(/"msg":"worker ready"/);
    assert.match(worker.stderr(), /"allowLoopback":false,"allowTargets":\[\],"msg":"target policy/);
    const plan = await writePlan(`
name: worker-refuses
regions: [a]
jobTimeoutSeconds: 30
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 3, modes: [reused] }]
`);
    const json = path.join(tempDir('probefleet-policy-'), 'run.json');
    const { code, stderr } = await runCli(
      ['run', plan, '--redis', TEST_REDIS_URL, '--prefix', prefix, '--json', json],
      { timeoutMs: 60_000 },
    );
    assert.equal(code, 1, `a job refused by the policy fails the run, through Redis as embedded\n${stderr}`);
    assert.match(stderr, /: 1 of 1 job failed: 1 TARGET_REFUSED_BY_POLICY \(exit 1\)$/m);
    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    assert.equal(report.results.length, 1);
    assert.equal(report.results[0].error?.code, 'TARGET_REFUSED_BY_POLICY');
    assert.match(report.results[0].error!.message, /allowed only with --allow-loopback/);
    assert.equal(connectionsTo(lab), 0);
    assert.equal(worker.child.exitCode, null, 'the worker is still running');
  });
});
