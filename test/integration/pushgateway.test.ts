// Pushing to a Pushgateway: what the groups hold after runs (a real Pushgateway), and how pushes
// behave when the gateway is slow, failing or asks for a password (small loopback HTTP servers
// that answer like one).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge, Registry } from 'prom-client';
import { createLogger } from '../../common/log.js';
import { startCoordinator } from '../../coordinator/coordinator-service.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import type { RunReport } from '../../contracts/result.js';
import { startLab, type Lab } from '../../lab/index.js';
import { groupPath, MetricsPusher } from '../../metrics/pusher.js';
import { writePlan } from '../helpers/plans.js';
import { needsPrometheus, requirePrometheus, startPushgateway, type Pushgateway } from '../helpers/prometheus.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, freePort, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');

interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A loopback server that answers request i with statuses[i] (the last one repeated), or never with 0. */
async function gatewayStandIn(
  statuses: number[],
): Promise<{ url: string; requests: Recorded[]; close(): Promise<void> }> {
  const requests: Recorded[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const status = statuses[Math.min(requests.length - 1, statuses.length - 1)];
      if (status !== 0) res.writeHead(status).end(req.method === 'GET' ? '{"status":"success","data":[]}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function oneGauge(): Registry {
  const registry = new Registry();
  new Gauge({ name: 'probefleet_last_run_timestamp_seconds', help: 'h', registers: [registry] }).set(1_700_000_000);
  return registry;
}

async function failuresCounted(registry: Registry): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'probefleet_push_failures_total');
  return metric?.values.reduce((n, v) => n + v.value, 0) ?? 0;
}

/** A cumulative group of one counter, pushed to a stand-in gateway at most every `intervalMs`. */
async function jobsGroupPushedEvery(intervalMs: number) {
  const gateway = await gatewayStandIn([200]);
  const registry = new Registry();
  const jobs = new Counter({ name: 'probefleet_probe_jobs_total', help: 'h', registers: [registry] });
  const pusher = new MetricsPusher({ url: gateway.url, pushIntervalMs: intervalMs }, log, new Registry());
  return { gateway, jobs, group: pusher.cumulative('probes', { region: 'r', instance: 'i' }, registry) };
}

describe('pushes to a gateway that fails, is slow, or wants a password', () => {
  test('a push retries with backoff, sends the text format with basic auth from the URL, and names its group in the path', async () => {
    const gateway = await gatewayStandIn([503, 500, 200]);
    const own = new Registry();
    const pusher = new MetricsPusher(
      { url: gateway.url.replace('http://', 'http://pf:s3cret@'), backoffMs: 20 },
      log,
      own,
    );
    assert.equal(pusher.url.includes('s3cret'), false);
    assert.equal(await pusher.replace('run', { plan: 'nightly', region: 'eu-west' }, oneGauge()), true);
    assert.equal(gateway.requests.length, 3);
    for (const r of gateway.requests) {
      assert.equal(r.method, 'PUT');
      assert.equal(r.url, '/metrics/job/probefleet_run/plan/nightly/region/eu-west');
      assert.equal(r.headers.authorization, `Basic ${Buffer.from('pf:s3cret').toString('base64')}`);
      assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      assert.match(r.body, /^probefleet_last_run_timestamp_seconds 1700000000$/m);
    }
    assert.equal(await failuresCounted(own), 0);
    await gateway.close();
  });

  test('a gateway that keeps failing costs a logged, counted failure, never an exception', async () => {
    const gateway = await gatewayStandIn([500]);
    const own = new Registry();
    const pusher = new MetricsPusher({ url: gateway.url, attempts: 3, backoffMs: 10 }, log, own);
    assert.equal(await pusher.replace('run', { plan: 'p', region: 'r' }, oneGauge()), false);
    assert.equal(gateway.requests.length, 3);
    assert.equal(await failuresCounted(own), 1);
    await gateway.close();
  });

  test('a gateway that never answers is given up on after the timeout of each attempt', async () => {
    const gateway = await gatewayStandIn([0]);
    const own = new Registry();
    const pusher = new MetricsPusher({ url: gateway.url, timeoutMs: 200, attempts: 2, backoffMs: 10 }, log, own);
    const started = Date.now();
    assert.equal(await pusher.replace('run', { plan: 'p', region: 'r' }, oneGauge()), false);
    assert.ok(Date.now() - started < 5_000, `gave up after ${Date.now() - started} ms`);
    assert.equal(await failuresCounted(own), 1);
    await gateway.close();
  });

  test('a cumulative group is pushed at most once per interval, and its last push holds everything', async (t) => {
    const { gateway, jobs, group } = await jobsGroupPushedEvery(300);
    t.after(() => gateway.close());
    const started = Date.now();
    // A job every 25 ms for about a second, each asking for a push.
    for (let i = 0; i < 40; i++) {
      jobs.inc();
      group.schedule();
      await sleep(25);
    }
    await group.flush();
    const took = Date.now() - started;
    const puts = gateway.requests.filter((r) => r.method === 'PUT');
    // One push at once, then one per interval at most (plus the one that the last jobs asked for).
    assert.ok(puts.length >= 2 && puts.length <= Math.ceil(took / 300) + 1, `${puts.length} pushes in ${took} ms`);
    assert.match(puts.at(-1)!.body, /^probefleet_probe_jobs_total 40$/m);
  });

  test('flush pushes what waits for the interval at once', async (t) => {
    const { gateway, jobs, group } = await jobsGroupPushedEvery(60_000);
    t.after(() => gateway.close());
    jobs.inc();
    group.schedule(); // pushed at once: the first
    await sleep(200);
    jobs.inc();
    group.schedule(); // waits for the interval (a minute)
    const started = Date.now();
    await group.flush();
    assert.ok(Date.now() - started < 10_000, `flushed after ${Date.now() - started} ms`);
    const puts = gateway.requests.filter((r) => r.method === 'PUT');
    assert.equal(puts.length, 2);
    assert.match(puts[1].body, /^probefleet_probe_jobs_total 2$/m);
  });

  test('grouping values that are not plain names are base64url-encoded in the path', () => {
    assert.equal(
      groupPath('probefleet', { region: 'eu-west', instance: 'host-1.example' }),
      '/metrics/job/probefleet/region/eu-west/instance/host-1.example',
    );
    assert.equal(
      groupPath('probefleet', { region: 'eu-west', instance: 'a/b c' }),
      `/metrics/job/probefleet/region/eu-west/instance@base64/${Buffer.from('a/b c').toString('base64url')}`,
    );
  });
});

describe('embedded runs pushing to a real Pushgateway', needsPrometheus, () => {
  let lab: Lab;
  let gateway: Pushgateway;
  let plan: string;

  before(async () => {
    requirePrometheus();
    lab = await startLab({ log });
    gateway = await startPushgateway();
    plan = await writePlan(`
name: pushes
targets:
  - { name: first, url: "${lab.url('keepalive')}" }
  - { name: second, url: "${lab.url('https')}", tls: { insecure: true } }
experiments:
  - { probe: reuse, requests: 10, modes: [reused, new] }
`);
  });

  after(async () => {
    await gateway?.stop();
    await lab?.close();
  });

  /** A histogram's count and a timestamp gauge of the cumulative group. */
  const sample = async (pattern: RegExp) =>
    Number((await (await fetch(`${gateway.url}/metrics`)).text()).match(pattern)?.[1]);
  const phaseCount =
    /^probefleet_request_phase_seconds_count\{(?=[^}]*target="first")(?=[^}]*mode="new")(?=[^}]*phase="total")[^}]*\} (\S+)$/m;
  const lastJob = /^probefleet_probe_last_run_timestamp_seconds\{(?=[^}]*target="second")[^}]*\} (\S+)$/m;

  const jobsCounted = async () => {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const counts = new Map<string, number>();
    for (const [, target, value] of text.matchAll(
      /^probefleet_probe_jobs_total\{[^}]*target="([^"]+)"[^}]*\} (\S+)$/gm,
    ))
      counts.set(target, (counts.get(target) ?? 0) + Number(value));
    return counts;
  };

  test('two runs: both targets stay visible, counters continue across processes, and the groups do not grow', async () => {
    const dir = tempDir('probefleet-push-');
    const args = (n: number) => [
      'run',
      plan,
      '--pushgateway',
      gateway.url,
      '--instance',
      'laptop',
      '--json',
      path.join(dir, `run${n}.json`),
    ];

    const first = await runCli(args(1));
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(Object.fromEntries(await jobsCounted()), { first: 2, second: 2 });
    assert.equal(await sample(phaseCount), 10);
    const firstLastJob = await sample(lastJob);

    const second = await runCli(args(2));
    assert.equal(second.code, 0, second.stderr);
    // A new process continued the group's counts instead of starting them again.
    assert.deepEqual(Object.fromEntries(await jobsCounted()), { first: 4, second: 4 });
    assert.equal(await sample(phaseCount), 20, 'histograms continue too');
    assert.ok((await sample(lastJob)) > firstLastJob, 'timestamps take the later value');

    const groups = await gateway.groups();
    assert.deepEqual(
      groups.map((g) => g.labels).sort((a, b) => a.job.localeCompare(b.job)),
      [
        { job: 'probefleet', region: 'local', instance: 'laptop' },
        { job: 'probefleet_cli', instance: 'laptop' },
        { job: 'probefleet_run', plan: 'pushes', region: 'local' },
      ],
    );
    const report = JSON.parse(await readFile(path.join(dir, 'run2.json'), 'utf8')) as RunReport;
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const lastRun = text.match(/^probefleet_last_run_timestamp_seconds\{[^}]*plan="pushes"[^}]*\} (\S+)$/m)?.[1];
    assert.equal(Number(lastRun), Date.parse(report.finishedAt) / 1000, 'the run group holds the second run');
    // Each target's cost, except where there is none to show (a median at or below 0 on a busy
    // machine): then no series at all, never a negative "cost".
    assert.equal(report.comparisons.length, 2);
    assert.ok(
      report.comparisons.some((c) => c.noCostReason === undefined),
      'at least one cost to push',
    );
    for (const c of report.comparisons) {
      const series = new RegExp(`^probefleet_new_connection_cost_seconds\\{[^}]*target="${c.target}"`, 'm');
      assert.equal(series.test(text), c.noCostReason === undefined, `${c.target}: ${c.noCostReason}`);
    }
  });

  test('a Pushgateway that is down does not fail the run: the report is printed, the failures logged', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const started = Date.now();
    const { code, stdout, stderr } = await runCli([
      'run',
      plan,
      '--pushgateway',
      nobody,
      '--pushgateway-retry-seconds',
      '2',
      '--log-level',
      'warn',
    ]);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /New-connection cost/);
    assert.match(stderr, /cannot push metrics to the Pushgateway/);
    assert.match(stderr, /"group":"probes"/);
    assert.match(stderr, /"group":"run"/);
    assert.match(stderr, /"group":"cli"/);
    // Each push retried for 2 s, the last one (the run's own counts) tried once: no hang at the end.
    assert.ok(Date.now() - started < 30_000, `${Date.now() - started} ms`);
  });

  test('a bad Pushgateway URL is bad input (exit 2)', async () => {
    const { code, stderr } = await runCli(['run', plan, '--pushgateway', 'ftp://gateway']);
    assert.equal(code, 2);
    assert.match(stderr, /--pushgateway: unsupported Pushgateway URL scheme "ftp:"/);
  });
});

describe('a Pushgateway outage at the end of a distributed run (a real gateway, stopped and started again)', {
  skip: needsPrometheus.skip || needsRedis.skip,
}, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let gateway: Pushgateway;
  let fleet: Fleet;
  let worker: CliProcess;
  const redisArgs = () => ['--redis', TEST_REDIS_URL, '--prefix', prefix];

  before(async () => {
    requirePrometheus();
    requireRedis();
    lab = await startLab({ log });
    gateway = await startPushgateway();
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    worker = await startWorkerProcess('a', TEST_REDIS_URL, prefix);
  });
  after(async () => {
    await worker?.stop();
    await fleet?.close();
    await gateway?.stop();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  const planFor = (name: string) =>
    writePlan(`
name: ${name}
regions: [a]
targets: [{ name: http, url: "${lab.url('keepalive')}" }]
experiments: [{ probe: reuse, requests: 2, modes: [reused] }]
`);
  const lastRunOf = async (plan: string) => {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const value = text.match(
      new RegExp(`^probefleet_last_run_timestamp_seconds\\{[^}]*plan="${plan}"[^}]*\\} (\\S+)$`, 'm'),
    );
    return value ? Number(value[1]) : undefined;
  };

  test('the coordinator counts the failed push and pushes the last-run gauges once the gateway is back', async () => {
    const coordinator = await startCoordinator({
      fleet,
      log,
      listen: { host: '127.0.0.1', port: 0 },
      pushgateway: { url: gateway.url, retryForMs: 1_000, backoffMs: 100, repushEveryMs: 500 },
    });
    try {
      const port = gateway.port;
      await gateway.stop();
      const plan = await planFor('outage');
      const run = await runCli([
        'run',
        plan,
        ...redisArgs(),
        '--pushgateway',
        `http://127.0.0.1:${port}`,
        '--pushgateway-retry-seconds',
        '1',
      ]);
      assert.equal(run.code, 0, `metrics never fail a run: ${run.stderr}`);
      assert.match(run.stderr, /cannot push metrics to the Pushgateway: going on without/);
      const runId = /run (\S+) submitted/.exec(run.stderr)![1]!;
      const report = (await fleet.store.get(runId))!;

      // The coordinator finished the run too, and could not push it either.
      let metrics = '';
      for (let i = 0; i < 100 && !/^probefleet_push_failures_total\{group="run"\} [1-9]/m.test(metrics); i++) {
        await sleep(100);
        metrics = await (await fetch(`${coordinator.url}/metrics`)).text();
      }
      assert.match(metrics, /^probefleet_push_failures_total\{group="run"\} 1$/m);

      gateway = await startPushgateway({ port });
      let lastRun: number | undefined;
      for (let i = 0; i < 100 && lastRun === undefined; i++) {
        await sleep(100);
        lastRun = await lastRunOf('outage');
      }
      assert.equal(lastRun, Date.parse(report.finishedAt) / 1000, "the run's gauges, pushed once the gateway answered");
      assert.match(
        await (await fetch(`${coordinator.url}/metrics`)).text(),
        /^probefleet_push_failures_total\{group="run"\} 1$/m,
        'counted once, not again for each retry',
      );
    } finally {
      await coordinator.close();
    }
  });

  test("the run command's own failed pushes are counted in its cli group, pushed after them", async () => {
    // The real gateway refuses a push whose metric has another type in another group (HTTP 400):
    // the run's last-run group is refused, the run command's own counts are not.
    // (The gauges of the run before go first: they would make the gateway refuse the counter.)
    await fetch(`${gateway.url}/metrics/job/probefleet_run/plan/outage/region/a`, { method: 'DELETE' });
    const conflicting = new Registry();
    new Counter({ name: 'probefleet_last_run_timestamp_seconds', help: 'h', registers: [conflicting] }).inc();
    const pushed = await fetch(`${gateway.url}/metrics/job/conflict`, {
      method: 'PUT',
      headers: { 'content-type': conflicting.contentType },
      body: await conflicting.metrics(),
    });
    assert.equal(pushed.status, 200, await pushed.text());
    const plan = await planFor('refused');
    const run = await runCli([
      'run',
      plan,
      ...redisArgs(),
      '--pushgateway',
      gateway.url,
      '--pushgateway-retry-seconds',
      '1',
      '--instance',
      'cron-box',
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /answered 400/);
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    assert.match(text, /^probefleet_push_failures_total\{group="run",instance="cron-box",job="probefleet_cli"\} 1$/m);
    assert.match(
      text,
      /^probefleet_push_failures_total\{group="probes",instance="cron-box",job="probefleet_cli"\} 0$/m,
    );
  });
});
