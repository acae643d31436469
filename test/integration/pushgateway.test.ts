// Pushing to a Pushgateway: what the groups hold after runs (a real Pushgateway), and how pushes
// behave when the gateway is slow, failing or asks for a password (small loopback HTTP servers
// that answer like one).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Gauge, Registry } from 'prom-client';
import { createLogger } from '../../common/log.js';
import type { RunReport } from '../../contracts/result.js';
import { startLab, type Lab } from '../../lab/index.js';
import { groupPath, MetricsPusher } from '../../worker/metrics/pusher.js';
import { writePlan } from '../helpers/plans.js';
import { needsPrometheus, requirePrometheus, startPushgateway, type Pushgateway } from '../helpers/prometheus.js';
import { freePort } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';

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
    const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-push-'));
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
    const { code, stdout, stderr } = await runCli(['run', plan, '--pushgateway', nobody, '--log-level', 'warn']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /New-connection cost/);
    assert.match(stderr, /cannot push metrics to the Pushgateway/);
    assert.match(stderr, /"group":"probes"/);
    assert.match(stderr, /"group":"run"/);
    assert.ok(Date.now() - started < 60_000);
  });

  test('a bad Pushgateway URL is bad input (exit 2)', async () => {
    const { code, stderr } = await runCli(['run', plan, '--pushgateway', 'ftp://gateway']);
    assert.equal(code, 2);
    assert.match(stderr, /--pushgateway: unsupported Pushgateway URL scheme "ftp:"/);
  });
});
