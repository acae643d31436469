// The load probe against real loopback servers: connection counts are checked against what the
// server itself accepted; runs are short and bounded by request counts where they can be.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import { describe, test } from 'node:test';
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

const log = createLogger('test', 'silent');
const lab = labForThisFile();

type LoadResult = ResultOf<'load'>;

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
});
