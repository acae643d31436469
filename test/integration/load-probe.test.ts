// The load probe against real loopback servers: connection counts are checked against what the
// server itself accepted; runs are short and bounded by request counts where they can be.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { runReportSchema, type ResultOf } from '../../contracts/result.js';
import { decodeHistogram } from '../../common/latency-histogram.js';
import { createLogger } from '../../common/log.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { splitPlan } from '../../coordinator/split.js';
import type { LabServerName } from '../../lab/index.js';
import { handleLabRequest } from '../../lab/routes.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { labForThisFile } from '../helpers/lab.js';
import { needsNginx, startNginx, type Nginx } from '../helpers/nginx.js';
import { createLabCa } from '../../lab/certs.js';

const log = createLogger('test', 'silent');
const lab = labForThisFile();

type LoadResult = ResultOf<'load'>;

const codesOf = (result: LoadResult) => result.findings.map((f) => f.code);

function planFor(url: string, experiment: string, extra = ''): string {
  return `
name: load-test
${extra}
targets:
  - name: t
    url: ${url}
${url.startsWith('https') ? '    tls: { insecure: true }' : ''}
experiments:
  - { probe: load, ${experiment} }
`;
}

async function runLoad(server: LabServerName, path: string, experiment: string) {
  const [job] = await jobsOf(planFor(lab.url(server, path), experiment));
  const acceptedBefore = lab.servers[server].connectionsAccepted();
  const result = (await executeJob(job, { region: 'local', log })) as LoadResult;
  return {
    result,
    details: result.details!,
    serverAccepted: lab.servers[server].connectionsAccepted() - acceptedBefore,
  };
}

describe('load probe', () => {
  test('closed loop: C connections open C connections, and the server agrees', async () => {
    const { result, details, serverAccepted } = await runLoad(
      'keepalive',
      '/',
      'connections: 8, requests: 2000, durationSeconds: 60',
    );
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(details.stoppedBy, 'requests');
    assert.equal(details.completed, 2000);
    assert.equal(result.summary.requests, 2000);
    assert.equal(details.connectionsOpened, 8);
    assert.equal(serverAccepted, 8);
    assert.deepEqual(details.protocols, { 'http/1.1': 8 });
    assert.deepEqual(details.statuses, { '2xx': 2000 });
    assert.equal(details.concurrency, 8);
    assert.equal(details.latencyMs.n, 2000);
    assert.equal(decodeHistogram(details.latencyHistogram).totalCount, 2000, 'the histogram travels with the result');
    const body = await (await request(lab.url('keepalive'))).body.arrayBuffer();
    assert.equal(details.bodyBytes, 2000 * body.byteLength);
    assert.ok(details.latencyMs.p50 <= details.latencyMs.p99 && details.latencyMs.p99 <= details.latencyMs.max);
    assert.ok(details.requestsPerSecond > 0);
  });

  test('HTTP/1.1: never more than one request in flight on a connection, also when the server closes them', async () => {
    let inFlight = 0;
    let maxInFlightOnOneSocket = 0;
    const perSocket = new WeakMap<net.Socket, number>();
    const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      maxInFlightOnOneSocket = Math.max(maxInFlightOnOneSocket, n);
      inFlight++;
      setTimeout(() => {
        perSocket.set(req.socket, perSocket.get(req.socket)! - 1);
        inFlight--;
        res.writeHead(200, { 'content-length': 2, ...(req.url === '/close' ? { connection: 'close' } : {}) });
        res.end('ok');
      }, 1);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
      for (const path of ['/', '/close']) {
        const [job] = await jobsOf(planFor(base + path, 'connections: 4, requests: 200'));
        const result = (await executeJob(job, { region: 'local', log })) as LoadResult;
        assert.equal(result.ok, true, JSON.stringify(result.error));
        assert.equal(result.details!.completed, 200, path);
      }
      assert.equal(maxInFlightOnOneSocket, 1);
      assert.equal(inFlight, 0);
    } finally {
      server.close();
    }
  });

  test('new mode: about one connection per request, and the server agrees', async () => {
    const { result, details, serverAccepted } = await runLoad(
      'keepalive',
      '/',
      'connections: 4, requests: 200, modes: [new]',
    );
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(details.completed, 200);
    assert.ok(
      details.connectionsOpened >= 200 && details.connectionsOpened <= 204,
      `opened ${details.connectionsOpened}`,
    );
    assert.equal(serverAccepted, details.connectionsOpened);
  });

  test('the duration bounds a run without a request count', async () => {
    const { result, details } = await runLoad('keepalive', '/', 'connections: 2, durationSeconds: 0.5');
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(details.stoppedBy, 'duration');
    assert.ok(
      result.summary.durationMs >= 500 && result.summary.durationMs < 10_000,
      `ran ${result.summary.durationMs} ms`,
    );
  });

  test('open loop: against a stalling endpoint, latency from the intended send time exceeds the service time', async () => {
    // 100 requests/s on one connection to an endpoint that takes 50 ms: it serves 20/s, so
    // requests queue; a closed-loop tool would report ~50 ms and hide the queue.
    const { result, details } = await runLoad(
      'keepalive',
      '/delay?ms=50',
      'connections: 1, rate: 100, durationSeconds: 1',
    );
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(result.variant.loop, 'open');
    assert.equal(details.scheduled, 100);
    assert.equal(
      details.completed + details.unsent!,
      details.scheduled,
      'every scheduled request answered or counted unsent',
    );
    assert.ok(details.unsent! > 50, `unsent ${details.unsent}: the target fell behind`);
    const service = details.serviceTimeMs!;
    assert.ok(service.p50 >= 45, `service p50 ${service.p50}`);
    assert.ok(
      details.latencyMs.p50 > 2 * service.p50,
      `corrected p50 ${details.latencyMs.p50} vs service p50 ${service.p50}`,
    );
    assert.ok(details.latencyMs.max > 400, `corrected max ${details.latencyMs.max}`);
  });

  test('HTTP/2: one connection carries many concurrent streams', async () => {
    // 100 requests of at least 20 ms each need 2,000 ms one at a time; 10 streams need ~200 ms.
    const { result, details, serverAccepted } = await runLoad(
      'h2',
      '/delay?ms=20',
      'connections: 1, streams: 10, requests: 100, modes: [h2]',
    );
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(details.completed, 100);
    assert.deepEqual(details.protocols, { h2: 1 });
    assert.equal(details.connectionsOpened, 1);
    assert.equal(serverAccepted, 1);
    assert.equal(details.concurrency, 10);
    assert.ok(result.summary.durationMs < 2000, `took ${result.summary.durationMs} ms: streams ran concurrently`);
  });

  test('HTTP/2 over cleartext (prior knowledge)', async () => {
    const h2c = http2.createServer(
      handleLabRequest as unknown as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
    );
    let accepted = 0;
    h2c.on('connection', () => accepted++);
    await new Promise<void>((resolve) => h2c.listen(0, '127.0.0.1', resolve));
    try {
      const [job] = await jobsOf(
        planFor(
          `http://127.0.0.1:${(h2c.address() as net.AddressInfo).port}/`,
          'connections: 2, streams: 5, requests: 300, modes: [h2]',
        ),
      );
      const result = (await executeJob(job, { region: 'local', log })) as LoadResult;
      assert.equal(result.ok, true, JSON.stringify(result.error));
      assert.equal(result.details!.completed, 300);
      assert.deepEqual(result.details!.protocols, { h2: 2 });
      assert.equal(accepted, 2);
    } finally {
      h2c.close();
    }
  });

  test('HTTP/2 asked of an HTTP/1.1-only server is a classified error', async () => {
    const { result, details } = await runLoad(
      'https',
      '/',
      'connections: 1, streams: 2, durationSeconds: 5, modes: [h2]',
    );
    assert.equal(result.ok, false);
    assert.equal(result.error?.code, 'HTTP2_ERROR');
    assert.match(result.error!.message, /did not negotiate HTTP\/2/);
    assert.equal(details.completed, 0);
    assert.equal(details.stoppedBy, 'failures');
  });

  test('a refused connection stops the run early with a code, not a spin for the whole duration', async () => {
    const [job] = await jobsOf(planFor('http://127.0.0.1:9/', 'connections: 4, durationSeconds: 30'));
    const result = (await executeJob(job, { region: 'local', log })) as LoadResult;
    assert.equal(result.ok, false);
    assert.equal(result.error?.code, 'CONNECTION_REFUSED');
    assert.equal(result.details!.stoppedBy, 'failures');
    assert.equal(result.details!.errors.CONNECTION_REFUSED, result.summary.errors);
    assert.ok(result.summary.durationMs < 10_000, `stopped after ${result.summary.durationMs} ms`);
  });

  test("the job's time bound cuts the run and says so", async () => {
    const [job] = await jobsOf(
      planFor(lab.url('keepalive', '/delay?ms=200'), 'connections: 2, durationSeconds: 30', 'jobTimeoutSeconds: 1'),
    );
    const result = (await executeJob(job, { region: 'local', log })) as LoadResult;
    assert.equal(result.error?.code, 'DEADLINE_EXCEEDED');
    assert.equal(result.details!.stoppedBy, 'deadline');
    assert.equal(result.summary.errors, 0, 'requests cut by our own deadline are not the target failing');
    assert.ok(result.summary.durationMs < 5000, `ran ${result.summary.durationMs} ms`);
  });

  test('two regions: the run report merges their histograms and shows the merged row', async () => {
    const loaded = await parsePlan(
      planFor(lab.url('keepalive'), 'connections: 2, requests: 300', 'regions: [eu, ap]'),
      'inline.yaml',
    );
    const jobs = splitPlan(loaded, 'test-run');
    const startedAt = new Date();
    const results = [];
    for (const job of jobs) results.push(await executeJob(job, { region: job.region, log }));
    const report = buildRunReport({
      runId: 'test-run',
      mode: 'distributed',
      plan: loaded.plan,
      startedAt,
      finishedAt: new Date(),
      results,
    });
    runReportSchema.parse(JSON.parse(JSON.stringify(report)));

    assert.equal(report.loadTotals.length, 1);
    const total = report.loadTotals[0];
    const [a, b] = results.map((r) => (r as LoadResult).details!);
    assert.deepEqual(total.regions.sort(), ['ap', 'eu']);
    assert.equal(total.completed, 600);
    assert.equal(total.latencyMs.n, 600);
    assert.equal(total.latencyMs.max, Math.max(a.latencyMs.max, b.latencyMs.max));
    assert.ok(
      total.latencyMs.p99 >= Math.min(a.latencyMs.p99, b.latencyMs.p99) &&
        total.latencyMs.p99 <= Math.max(a.latencyMs.p99, b.latencyMs.p99),
    );
    assert.equal(total.requestsPerSecond, a.requestsPerSecond + b.requestsPerSecond);

    const text = renderRunReport(report);
    assert.match(text, /Load: answered requests per second/);
    assert.match(text, /^\s+eu\s+t\s+reused\s+2 conns\s+300\s/m);
    assert.match(text, /^\s+all 2 regions\s+t\s+reused\s+closed\s+600\s/m);
  });

  test('two threads share the connections: one request bound, the connections asked for, one histogram', async () => {
    const { result, details, serverAccepted } = await runLoad(
      'keepalive',
      '/',
      'connections: 4, requests: 3001, durationSeconds: 60, threads: 2',
    );
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(details.stoppedBy, 'requests');
    assert.equal(details.completed, 3001, 'the threads take request numbers from one counter');
    assert.equal(details.latencyMs.n, 3001);
    assert.equal(decodeHistogram(details.latencyHistogram).totalCount, 3001);
    assert.equal(details.connectionsOpened, 4);
    assert.equal(serverAccepted, 4);
    assert.equal(details.concurrency, 4);
    assert.equal(details.client.threads, 2);
    assert.equal(details.client.eventLoopUtilization.length, 2);
  });

  test('open loop over two threads: one schedule, every due request sent or counted unsent', async () => {
    const { result, details } = await runLoad(
      'keepalive',
      '/',
      'connections: 2, rate: 300, durationSeconds: 1, threads: 2',
    );
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(details.client.threads, 2);
    assert.equal(details.scheduled, 300);
    assert.equal(details.completed + details.unsent! + result.summary.errors, 300);
  });

  test('threads: auto is one per core, at most one per connection', async () => {
    const { details } = await runLoad('keepalive', '/', 'connections: 1, requests: 10');
    assert.equal(details.client.threads, 1);
    assert.equal(details.client.cores, availableParallelism());
  });

  test('a client kept busy is saturated and says so; one waiting on a slow target is not', async () => {
    const plan = 'connections: 2, durationSeconds: 1, threads: 1';
    const waiting = await runLoad('keepalive', '/delay?ms=50', plan);
    assert.equal(waiting.result.ok, true, JSON.stringify(waiting.result.error));
    assert.ok(waiting.details.client.eventLoopUtilization[0] < 0.9, JSON.stringify(waiting.details.client));
    assert.deepEqual(codesOf(waiting.result), []);

    // The thread sending the load has other work that leaves it no rest: it is the bottleneck.
    const busy = setInterval(() => {
      const until = performance.now() + 45;
      while (performance.now() < until);
    }, 1);
    const saturated = await runLoad('keepalive', '/delay?ms=50', plan).finally(() => clearInterval(busy));
    assert.equal(saturated.result.ok, true, JSON.stringify(saturated.result.error));
    assert.ok(saturated.details.client.eventLoopUtilization[0] >= 0.9, JSON.stringify(saturated.details.client));
    assert.deepEqual(codesOf(saturated.result), ['LOAD_CLIENT_SATURATED']);
    assert.match(saturated.result.findings[0].evidence, /include the client's own queueing/);
  });
});

describe('HTTP/2 load against nginx (TLS, ALPN h2)', needsNginx, () => {
  let nginx: Nginx;
  before(async () => {
    const ca = await createLabCa();
    nginx = await startNginx([
      {
        files: { 'index.html': 'probefleet bench.\n\n' },
        tls: { ...(await ca.issue({ hosts: ['127.0.0.1'] })), http2: true },
        directives: [`add_header alt-svc 'h3=":8443"; ma=60' always;`],
      },
    ]);
  });
  after(() => nginx?.stop());

  test('streams over the connections asked for, each request logged by nginx on them', async () => {
    for (const threads of [1, 2]) {
      const [job] = await jobsOf(
        planFor(`${nginx.urls[0]}/`, `connections: 2, streams: 10, requests: 2000, modes: [h2], threads: ${threads}`),
      );
      const logged = (await nginx.accessLog()).length;
      const result = (await executeJob(job, { region: 'local', log })) as LoadResult;
      assert.equal(result.ok, true, JSON.stringify(result.error));
      const details = result.details!;
      assert.equal(details.completed, 2000);
      assert.deepEqual(details.protocols, { h2: 2 });
      assert.deepEqual(details.statuses, { '2xx': 2000 });
      assert.equal(details.bodyBytes, 2000 * 19);
      assert.equal(details.client.threads, threads);
      assert.deepEqual(result.altSvc, ['h3=":8443"; ma=60']);
      const lines = (await nginx.accessLog()).slice(logged);
      assert.equal(lines.length, 2000);
      assert.equal(new Set(lines.map((line) => line.connection)).size, 2, 'two connections carried every request');
    }
  });
});
