// Egress proxies against Debian's tinyproxy on loopback: the plan's `proxy`, the worker's
// HTTPS_PROXY / HTTP_PROXY / NO_PROXY as curl reads them, `proxy: none`; every probe's connections
// tunnel through CONNECT to the address the target policy allowed, and the CONNECT round trip is
// its own phase (`proxy`). tinyproxy's own log is the witness of what went through it.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import type { RequestSample } from '../../contracts/common.js';
import { runReportSchema, type ProbeResult, type ResultOf, type RunReport } from '../../contracts/result.js';
import { startLab, type Lab } from '../../lab/index.js';
import { executeJob } from '../../worker/execute-job.js';
import { noProxyMatches, proxyFromEnvironment } from '../../worker/http/proxy.js';
import { jobsOf, writePlan } from '../helpers/plans.js';
import { runCli } from '../helpers/repo.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { tempDir } from '../helpers/temp-dir.js';
import { needsTinyproxy, startTinyproxy, type Tinyproxy } from '../helpers/tinyproxy.js';

const log = createLogger('test', 'silent');

test('which proxy the environment names, as curl decides', () => {
  const env = {
    https_proxy: 'http://p:1',
    http_proxy: 'http://h:2',
    NO_PROXY: 'internal.example, .corp, 10.0.0.0/8, ::1',
  };
  const of = (url: string, e: NodeJS.ProcessEnv = env) => proxyFromEnvironment(new URL(url), e);
  assert.equal(of('https://api.example/'), 'http://p:1');
  assert.equal(of('http://api.example/'), 'http://h:2');
  assert.equal(
    of('http://api.example/', { HTTP_PROXY: 'http://cgi:3' }),
    undefined,
    'upper-case HTTP_PROXY is not read',
  );
  assert.equal(of('https://a.b.corp/'), undefined);
  assert.equal(of('https://corp/'), undefined);
  assert.equal(of('https://internal.example/'), undefined);
  assert.equal(of('https://xinternal.example/'), 'http://p:1', 'a suffix only at a dot');
  assert.equal(of('https://10.2.3.4/'), undefined);
  assert.equal(of('https://11.2.3.4/'), 'http://p:1');
  assert.equal(of('https://[::1]:8443/'), undefined);
  assert.equal(of('https://x/', { ALL_PROXY: 'http://all:4' }), 'http://all:4');
  assert.ok(noProxyMatches('anything', '*'));
});

test("a proxy from the environment that cannot be used is the job's result, never a bypass or a crash", async () => {
  const [job] = await jobsOf(
    'name: bad-proxy\ntargets: [{ name: t, url: "http://127.0.0.1:9/" }]\nexperiments: [{ probe: reuse, requests: 1, modes: [reused] }]\n',
  );
  for (const [value, message] of [
    ['http://[broken', /the proxy of this worker's environment is not a URL/],
    ['socks5://127.0.0.1:1080', /only http:\/\/ proxies are supported/],
  ] as const) {
    const saved = process.env.http_proxy;
    process.env.http_proxy = value;
    try {
      const result = await executeJob(job, { region: 'local', log });
      assert.equal(result.error?.code, 'PROXY_REFUSED', value);
      assert.match(result.error!.message, message);
      assert.equal(result.summary.connectionsOpened, 0);
    } finally {
      if (saved === undefined) delete process.env.http_proxy;
      else process.env.http_proxy = saved;
    }
  }
});

describe('through tinyproxy', needsTinyproxy, () => {
  let lab: Lab;
  let proxy: Tinyproxy;
  before(async () => {
    lab = await startLab({ log });
    proxy = await startTinyproxy();
  });
  after(async () => {
    await proxy?.stop();
    await lab?.close();
  });

  const run = async (yaml: string): Promise<ProbeResult[]> => {
    const results: ProbeResult[] = [];
    for (const job of await jobsOf(yaml)) results.push(await executeJob(job, { region: 'local', log }));
    return results;
  };
  const samplesOf = (r: ProbeResult) => (r.details as { samples: RequestSample[] }).samples;

  test("the plan's proxy: every connection tunnels to the checked address; CONNECT is the proxy phase", async () => {
    const before = (await proxy.connects()).length;
    const results = await run(`
name: proxied
targets:
  - { name: http, url: "${lab.url('keepalive')}", proxy: "${proxy.url}" }
  - { name: https, url: "${lab.url('https')}", tls: { insecure: true }, proxy: "${proxy.url}" }
experiments:
  - { probe: reuse, requests: 4, modes: [reused, new] }
  - { probe: tls, targets: [https], samples: 3, versions: ["1.3"], resumption: false }
  - { probe: load, targets: [http], modes: [reused], connections: 2, requests: 10, durationSeconds: 10 }
`);
    for (const r of results) assert.equal(r.ok, true, `${r.target} ${r.probe}: ${JSON.stringify(r.error)}`);
    const opened = results.reduce((n, r) => n + r.summary.connectionsOpened, 0);
    const connects = (await proxy.connects()).slice(before);
    assert.equal(connects.length, opened, 'one CONNECT per connection the probes counted');
    const ports = new Set([lab.servers.keepalive.port, lab.servers.https.port].map((p) => `127.0.0.1:${p}`));
    assert.ok(
      connects.every((c) => ports.has(c)),
      connects.join(' '),
    );
    for (const r of results.filter((r): r is ResultOf<'reuse'> & ProbeResult => r.probe === 'reuse')) {
      for (const s of samplesOf(r)) {
        if (s.newConnection)
          assert.ok((s.phases.proxy ?? 0) > 0, `${r.target} ${r.variant.mode}: ${JSON.stringify(s.phases)}`);
        else assert.equal(s.phases.proxy, 0, 'a reused connection skips the CONNECT');
      }
      assert.ok(r.summary.phases.proxy, 'the summary has the phase');
    }
    const tls = results.find((r) => r.probe === 'tls')!;
    assert.ok(samplesOf(tls).every((s) => (s.phases.proxy ?? 0) > 0));
  });

  test('HTTPS_PROXY and HTTP_PROXY from the environment, NO_PROXY, and proxy: none over them, through the CLI', async () => {
    const dir = tempDir('probefleet-proxy-');
    const plan = await writePlan(`
name: env-proxy
targets:
  - { name: env, url: "${lab.url('keepalive')}" }
  - { name: direct, url: "${lab.url('https')}", tls: { insecure: true }, proxy: none }
experiments: [{ probe: reuse, requests: 2, modes: [new] }]
`);
    const json = path.join(dir, 'run.json');
    const before = (await proxy.connects()).length;
    const proxied = await runCli(['run', plan, '--json', json], {
      env: { http_proxy: proxy.url, HTTPS_PROXY: proxy.url, NO_PROXY: '' },
    });
    assert.equal(proxied.code, 0, proxied.stderr);
    assert.deepEqual(
      (await proxy.connects()).slice(before),
      [`127.0.0.1:${lab.servers.keepalive.port}`, `127.0.0.1:${lab.servers.keepalive.port}`],
      'the environment proxy for the http target; none for the one that says none',
    );
    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    assert.ok(report.results.find((r) => r.target === 'env')!.summary.phases.proxy);
    assert.match(proxied.stdout, /Through a proxy: opening a connection, phase by phase/);
    assert.match(proxied.stdout, /local\s+env\s+new\s+2\s+\S+ ms\s+\S+ ms\s+-\n/, 'http: no tls');
    assert.doesNotMatch(proxied.stdout, /local\s+direct\s+new\s+2\s+\S+ ms\s+\S+ ms/);
    assert.equal(report.results.find((r) => r.target === 'direct')!.summary.phases.proxy, undefined);

    const excluded = await runCli(['run', plan], { env: { http_proxy: proxy.url, NO_PROXY: '127.0.0.1' } });
    assert.equal(excluded.code, 0, excluded.stderr);
    assert.equal((await proxy.connects()).length, before + 2, 'NO_PROXY: nothing through the proxy');
  });

  test('curl as the cold client tunnels through the same proxy (proxytunnel), one CONNECT per process', async () => {
    const before = (await proxy.connects()).length;
    const [r] = await run(`
name: cold-proxy
targets: [{ name: http, url: "${lab.url('keepalive')}", proxy: "${proxy.url}" }]
experiments: [{ probe: reuse, requests: 3, modes: [cold], client: curl }]
`);
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.deepEqual((await proxy.connects()).slice(before), Array(3).fill(`127.0.0.1:${lab.servers.keepalive.port}`));
  });

  test('a target whose responses fail their checks still shows what opening its connections cost', async () => {
    const plan = await writePlan(`
name: proxy-check
targets: [{ name: missing, url: "${lab.url('keepalive', '/no-such-page')}", proxy: "${proxy.url}" }]
experiments: [{ probe: reuse, requests: 2, modes: [new] }]
`);
    const { code, stdout, stderr } = await runCli(['run', plan]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /: 1 of 1 job failed: 1 RESPONSE_CHECK_FAILED/);
    assert.match(stdout, /Through a proxy[^\n]*\n.*\n.*\n {2}local\s+missing\s+new\s+2\s+\S+ ms\s+\S+ ms\s+-\n/);
  });

  test('the target policy judges the final target before the proxy sees anything', async () => {
    const plan = await writePlan(`
name: proxy-policy
targets: [{ name: http, url: "${lab.url('keepalive')}", proxy: "${proxy.url}" }]
experiments: [{ probe: reuse, requests: 2, modes: [reused] }]
`);
    const before = (await proxy.connects()).length;
    const { code, stdout } = await runCli(['run', plan, '--no-allow-loopback']);
    assert.equal(code, 1);
    assert.match(stdout, /TARGET_REFUSED_BY_POLICY/);
    assert.equal((await proxy.connects()).length, before);
  });

  test('a proxy that refuses the tunnel: PROXY_REFUSED with its answer', async () => {
    const strict = await startTinyproxy(['ConnectPort 443']);
    try {
      const [r] = await run(`
name: refused
targets: [{ name: http, url: "${lab.url('keepalive')}", proxy: "${strict.url}" }]
experiments: [{ probe: reuse, requests: 3, modes: [reused] }]
`);
      assert.equal(r.error?.code, 'PROXY_REFUSED');
      assert.match(r.error!.message, new RegExp(`proxy ${strict.url} answered CONNECT 127\\.0\\.0\\.1:\\d+ with 403`));
    } finally {
      await strict.stop();
    }
  });

  describe('a region whose worker is behind the proxy (its environment)', needsRedis, () => {
    const prefix = testPrefix();
    let worker: CliProcess;
    before(async () => {
      requireRedis();
      worker = await startWorkerProcess('behind', TEST_REDIS_URL, prefix, [], { http_proxy: proxy.url, NO_PROXY: '' });
    });
    after(async () => {
      await worker?.stop();
      if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
    });

    test("the worker's jobs tunnel through it, and the report shows the proxy phase", async () => {
      const plan = await writePlan(`
name: behind-proxy
regions: [behind]
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 3, modes: [new] }]
`);
      const json = path.join(tempDir('probefleet-proxy-'), 'run.json');
      const before = (await proxy.connects()).length;
      const { code, stderr } = await runCli(
        ['run', plan, '--redis', TEST_REDIS_URL, '--prefix', prefix, '--json', json],
        {
          timeoutMs: 60_000,
        },
      );
      assert.equal(code, 0, stderr);
      const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
      assert.ok(report.results[0].summary.phases.proxy, JSON.stringify(report.results[0].summary.phases));
      assert.equal((await proxy.connects()).length - before, 3);
    });
  });
});
