// Hostile and broken targets: every one yields a result with its own error code within the
// job's time bound, through the worker path in this process and through a real `probefleet
// worker` process on real Redis, which stays up with its memory bounded (the lab's 1 GiB body and
// decompression bombs). Then the load probe's hard time bound against a server that sends one
// byte per second (embedded, on a worker, under SIGTERM), counting sockets on the server's side,
// and a run whose one experiment asks HTTP/2 of an HTTP/1.1 server.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { ErrorCode } from '../../contracts/common.js';
import type { ProbeKind } from '../../contracts/probes/index.js';
import { runReportSchema, type ProbeResult, type ResultOf, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { startLab, type Lab, type LabServerName } from '../../lab/index.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf, writePlan } from '../helpers/plans.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');
const quiet = { update() {}, done() {} };

/** Each job's time bound; every case must end well within it. */
const JOB_TIMEOUT_SECONDS = 15;
/** Per-request bound of every probe here: the silent and trickling servers fail after it. */
const REQUEST_TIMEOUT_MS = 1000;

/** The most a worker process may reach, at its peak, meeting every case (VmHWM): "well under 200 MB" with a
 * 1 GiB body and 1 GiB decompression bombs among them. */
const MAX_WORKER_PEAK_BYTES = 200e6;

const PROBE_PARAMS: Record<Extract<ProbeKind, 'reuse' | 'tls' | 'http2' | 'compression' | 'load' | 'drain'>, string> = {
  reuse: `requests: 3, modes: [reused], timeoutMs: ${REQUEST_TIMEOUT_MS}`,
  tls: `samples: 2, versions: ["1.3"], resumption: false, timeoutMs: ${REQUEST_TIMEOUT_MS}`,
  http2: `repeats: 1, concurrent: 2, timeoutMs: ${REQUEST_TIMEOUT_MS}`,
  // The lab makes its brotli bomb on the first request that wants it: about a second of CPU.
  compression: 'requests: 2, timeoutMs: 10000',
  load: `connections: 2, durationSeconds: 1, timeoutMs: ${REQUEST_TIMEOUT_MS}`,
  drain: `requests: 2, modes: [json], timeoutMs: ${REQUEST_TIMEOUT_MS}`,
};
/** The `cold` mode runs curl where it is installed (as here, Debian's), else Node; both are met. */
const COLD = `requests: 1, modes: [cold], timeoutMs: ${REQUEST_TIMEOUT_MS}`;
const COLD_NODE = `${COLD}, client: node`;

interface Case {
  /** The target's name, when one server meets more than one probe; the server's name otherwise. */
  name?: string;
  server: LabServerName;
  /** The lab path the target asks for, when not `/`. */
  path?: string;
  probe: keyof typeof PROBE_PARAMS;
  /** The code its result must carry; null: an answer that is data, measured without an error. */
  code: ErrorCode | null;
  params?: string;
  /** What else the result must show. */
  check?: (result: ProbeResult) => void;
}

/** The decompression bombs: decoding stopped early, the bytes decoded so far in the result. */
function decodedSoFar(maxBytes: number) {
  return (result: ProbeResult) => {
    const [row] = (result as ResultOf<'compression'>).details!.encodings;
    assert.ok(row.decodeError, 'the row says why decoding stopped');
    assert.ok(row.decodedBytes! > 0 && row.decodedBytes! <= maxBytes, `decoded ${row.decodedBytes} bytes`);
  };
}

/** The lab server, the probe that meets it, and the code its result must carry (docs/lab.md, "Hostile and broken targets"). */
const CASES: Case[] = [
  { server: 'refused', probe: 'reuse', code: 'CONNECTION_REFUSED' },
  { server: 'reset-headers', probe: 'reuse', code: 'CONNECTION_RESET' },
  { server: 'silent', probe: 'reuse', code: 'RESPONSE_TIMEOUT' },
  { server: 'trickle', probe: 'reuse', code: 'BODY_TIMEOUT' },
  // Time to read up to the per-job byte cap (JOB_LIMITS.responseBytes) on a busy machine: the code must be about size, not time.
  {
    server: 'huge-body',
    probe: 'reuse',
    code: 'RESPONSE_TOO_LARGE',
    params: 'requests: 2, modes: [reused], timeoutMs: 6000',
  },
  { server: 'bad-status', probe: 'reuse', code: 'HTTP_PROTOCOL_ERROR' },
  { server: 'huge-headers', probe: 'reuse', code: 'RESPONSE_HEADERS_TOO_LARGE' },
  { server: 'expired', probe: 'tls', code: 'TLS_CERT_EXPIRED' },
  { server: 'self-signed', probe: 'tls', code: 'TLS_CERT_UNTRUSTED' },
  { server: 'wrong-host', probe: 'tls', code: 'TLS_HOSTNAME_MISMATCH' },
  { server: 'tls-reset', probe: 'tls', code: 'TLS_HANDSHAKE_RESET' },
  { server: 'h2-goaway', probe: 'http2', code: 'HTTP2_GOAWAY' },
  { server: 'h2-rst', probe: 'http2', code: 'HTTP2_STREAM_RESET' },
  // 1 KB of brotli that decodes to 1 GiB: stopped by the ratio check past 1 MiB.
  {
    name: 'bomb-br',
    server: 'decompression-bomb',
    probe: 'compression',
    code: 'DECODE_RATIO_TOO_HIGH',
    params: `encodings: [br], ${PROBE_PARAMS.compression}`,
    check: decodedSoFar(2 << 20),
  },
  // 1 MB of gzip that decodes to 1 GiB, with the ratio check out of the way: stopped at maxDecodedBytes.
  {
    name: 'bomb-gzip',
    server: 'decompression-bomb',
    probe: 'compression',
    code: 'DECODED_BODY_TOO_LARGE',
    params: `encodings: [gzip], maxDecodedBytes: 8388608, maxDecodeRatio: 1000000, ${PROBE_PARAMS.compression}`,
    check: decodedSoFar(8 * 2 ** 20 + 16 * 1024),
  },
  // The same slow servers through the other probes' own request paths, each bounded whole.
  { name: 'silent-cold', server: 'silent', probe: 'reuse', code: 'RESPONSE_TIMEOUT', params: COLD },
  { name: 'trickle-cold', server: 'trickle', probe: 'reuse', code: 'BODY_TIMEOUT', params: COLD },
  {
    name: 'huge-headers-cold',
    server: 'huge-headers',
    probe: 'reuse',
    code: 'RESPONSE_HEADERS_TOO_LARGE',
    params: COLD,
  },
  { name: 'silent-cold-node', server: 'silent', probe: 'reuse', code: 'RESPONSE_TIMEOUT', params: COLD_NODE },
  { name: 'trickle-cold-node', server: 'trickle', probe: 'reuse', code: 'BODY_TIMEOUT', params: COLD_NODE },
  {
    name: 'huge-headers-cold-node',
    server: 'huge-headers',
    probe: 'reuse',
    code: 'RESPONSE_HEADERS_TOO_LARGE',
    params: COLD_NODE,
  },
  { name: 'trickle-http2', server: 'trickle', probe: 'http2', code: 'BODY_TIMEOUT' },
  // Answers that once ended a run or a worker (hostile-answers.test.ts shows each through `run`).
  { server: 'h2-push-reset', probe: 'http2', code: null },
  {
    name: 'alt-svc-escape',
    server: 'keepalive',
    path: `alt-svc?value=${encodeURIComponent('%="x:1"')}`,
    probe: 'reuse',
    code: null,
  },
  {
    name: 'alt-svc-max-age',
    server: 'keepalive',
    path: `alt-svc?value=${encodeURIComponent(`h3=":443"; ma=${'9'.repeat(400)}`)}`,
    probe: 'reuse',
    code: null,
  },
  { name: 'early-hints', server: 'h2c', path: 'early-hints', probe: 'http2', code: null },
  // 16 MiB of nested brackets: refused at Go's depth after 10 KB, nothing built.
  {
    name: 'json-nested',
    server: 'keepalive',
    path: 'json-nested?depth=8388608',
    probe: 'drain',
    code: 'UNEXPECTED_BODY',
  },
  {
    name: 'trickle-load',
    server: 'trickle',
    probe: 'load',
    code: 'BODY_TIMEOUT',
    check: (result) => {
      const details = (result as ResultOf<'load'>).details!;
      assert.equal(details.stoppedBy, 'duration');
      assert.ok(details.bodyBytes > 0, 'what arrived before the cut is counted');
    },
  },
];
const nameOf = (c: Case) => c.name ?? c.server;

/** One target and one experiment per case, all in `region`. */
function hostilePlan(lab: Lab, region: string): string {
  const targets = CASES.map((c) => {
    const tls = lab.servers[c.server].url.startsWith('https:') ? `, tls: { ca: "${lab.caFile}" }` : '';
    return `  - { name: ${nameOf(c)}, url: "${lab.url(c.server)}${c.path ?? ''}"${tls} }`;
  });
  const experiments = CASES.map(
    (c) => `  - { probe: ${c.probe}, targets: [${nameOf(c)}], ${c.params ?? PROBE_PARAMS[c.probe]} }`,
  );
  return [
    `name: hostile`,
    `regions: [${region}]`,
    `jobTimeoutSeconds: ${JOB_TIMEOUT_SECONDS}`,
    'targets:',
    ...targets,
    'experiments:',
    ...experiments,
    '',
  ].join('\n');
}

function assertCase(result: ProbeResult | undefined, c: Case): void {
  const name = nameOf(c);
  assert.ok(result, `a result for ${name}`);
  assert.equal(
    result.ok,
    c.code === null,
    `${name} ${c.code === null ? 'measures' : 'fails'}: ${result.error?.message}`,
  );
  assert.equal(result.error?.code ?? null, c.code, `${name}: ${result.error?.message}`);
  const tookMs = Date.parse(result.finishedAt) - Date.parse(result.startedAt);
  assert.ok(tookMs < JOB_TIMEOUT_SECONDS * 1000, `${name} ended within the job's time bound (took ${tookMs} ms)`);
  c.check?.(result);
}

/** Resident memory of a process, now and at its peak (Linux /proc), in bytes. */
async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

describe('hostile and broken targets', () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab({ log });
  });
  after(async () => {
    await lab?.close();
  });

  test('the refused server really refuses: nothing listens on its port', async () => {
    const { port } = lab.servers.refused;
    const res = await fetch(lab.url('refused')).catch((err: Error) => err);
    assert.ok(res instanceof Error);
    assert.equal((res.cause as NodeJS.ErrnoException).code, 'ECONNREFUSED', `port ${port}`);
  });

  for (const c of CASES) {
    test(`${nameOf(c)}, met by the ${c.probe} probe: ${c.code ?? 'measured'} within the job's time bound`, async () => {
      const [job] = (await jobsOf(hostilePlan(lab, 'local'))).filter((j) => j.target.name === nameOf(c));
      const result = await executeJob(job, { region: 'local', log });
      assertCase(result, c);
    });
  }

  describe('through a real worker process on real Redis', needsRedis, () => {
    const prefix = testPrefix();
    let fleet: Fleet;
    let worker: CliProcess | undefined;
    before(() => {
      requireRedis();
      fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    });
    after(async () => {
      await worker?.stop('SIGKILL');
      await fleet?.close();
      if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
    });

    test('every case gets its code, the worker stays up, its peak memory stays under 200 MB', async (t) => {
      worker = await startWorkerProcess('hostile', TEST_REDIS_URL, prefix);
      const before = await memoryOf(worker.pid);
      const run = await submitRun(fleet, await parsePlan(hostilePlan(lab, 'hostile'), 'hostile.yaml'), 'hostile-run');
      const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
      assert.ok(report);
      assert.deepEqual(report.unfinishedJobs, []);
      for (const c of CASES) {
        assertCase(
          report.results.find((r) => r.target === nameOf(c)),
          c,
        );
      }
      assert.ok(
        report.results.every((r) => r.worker.pid === worker!.pid),
        'measured by the worker process',
      );

      assert.equal(worker.child.exitCode, null, 'the worker is still running');
      // The kernel's high-water mark of the worker's resident memory over every case, not a sample.
      const { peak } = await memoryOf(worker.pid);
      t.diagnostic(`worker RSS at start ${(before.rss / 1e6).toFixed(0)} MB, peak ${(peak / 1e6).toFixed(0)} MB`);
      assert.ok(peak < MAX_WORKER_PEAK_BYTES, `peak RSS ${(peak / 1e6).toFixed(0)} MB`);

      // And it still measures: a healthy target right after.
      const healthy = await parsePlan(
        `name: after-hostile\nregions: [hostile]\ntargets: [{ name: ok, url: "${lab.url('keepalive')}" }]\nexperiments: [{ probe: reuse, requests: 3, modes: [reused] }]\n`,
        'healthy.yaml',
      );
      const second = await waitForRun(fleet, (await submitRun(fleet, healthy, 'after-hostile-run')).data, {
        log,
        progress: quiet,
        pollMs: 200,
      });
      assert.equal(second?.results[0]?.ok, true);
      assert.equal(second?.results[0]?.worker.pid, worker.pid);
    });
  });
});

/** A plain node:http server: HTTP/1.1 only, answers at once. */
async function startPlainServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end('hello'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A body of 10,000 bytes sent one byte per second, and when each of the server's sockets closed (its side). */
async function startDripServer() {
  const open = new Set<net.Socket>();
  const closedAt: number[] = [];
  let accepted = 0;
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 10_000 });
    res.write('x');
    const drip = setInterval(() => res.write('x'), 1000);
    res.on('close', () => clearInterval(drip));
  });
  server.on('connection', (socket: net.Socket) => {
    accepted++;
    open.add(socket);
    socket.on('close', () => {
      open.delete(socket);
      closedAt.push(Date.now());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`,
    open,
    /** Sockets accepted and closed since the last call. */
    take(): { accepted: number; closedAt: number[] } {
      const seen = { accepted, closedAt: closedAt.splice(0) };
      accepted = 0;
      return seen;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * From the job's bound to the server seeing each socket close: the job's timer, undici destroying
 * the socket, the FIN crossing loopback, then this process's event loop, on a shared 2-vCPU machine.
 */
const CLOSE_TOLERANCE_MS = 1000;
const DRIP_BOUND_SECONDS = 3;
const DRIP_CONNECTIONS = 4;

/** A load experiment whose requests never end by themselves (timeoutMs far past the job's bound), then a healthy one. */
function dripPlan(dripUrl: string, plainUrl: string, region: string, jobTimeoutSeconds = DRIP_BOUND_SECONDS): string {
  return `name: drip
regions: [${region}]
jobTimeoutSeconds: ${jobTimeoutSeconds}
targets:
  - { name: drip, url: "${dripUrl}" }
  - { name: plain, url: "${plainUrl}" }
experiments:
  - { probe: load, targets: [drip], connections: ${DRIP_CONNECTIONS}, durationSeconds: 1, timeoutMs: 60000 }
  - { probe: reuse, targets: [plain], requests: 3, modes: [reused] }
`;
}

/** The load job ended at its bound with what it had measured, and every connection closed by then. */
function assertCutAtBound(report: RunReport, seen: { accepted: number; closedAt: number[] }): void {
  const load = report.results.find((r): r is ResultOf<'load'> => r.probe === 'load');
  assert.ok(load, 'a result for the load job');
  assert.equal(load.error?.code, 'DEADLINE_EXCEEDED', load.error?.message);
  assert.equal(load.details?.stoppedBy, 'deadline');
  assert.ok(load.details!.bodyBytes >= DRIP_CONNECTIONS, 'the bytes that arrived are kept');
  assert.equal(load.summary.errors, 0, 'requests cut by the bound are not the target failing');
  const bound = Date.parse(load.startedAt) + DRIP_BOUND_SECONDS * 1000;
  assert.ok(Date.parse(load.finishedAt) <= bound + CLOSE_TOLERANCE_MS, `finished ${load.finishedAt}`);
  assert.equal(seen.accepted, DRIP_CONNECTIONS);
  assert.equal(seen.closedAt.length, DRIP_CONNECTIONS, 'every socket the server accepted is closed');
  for (const at of seen.closedAt)
    assert.ok(at <= bound + CLOSE_TOLERANCE_MS, `a socket closed ${at - bound} ms after the job's bound`);
  assert.equal(report.results.find((r) => r.probe === 'reuse')?.ok, true, 'the next job ran');
}

describe('the load probe against a server that sends one byte per second: the time bound is hard', () => {
  let drip: Awaited<ReturnType<typeof startDripServer>>;
  let plain: Awaited<ReturnType<typeof startPlainServer>>;
  before(async () => {
    drip = await startDripServer();
    plain = await startPlainServer();
  });
  after(async () => {
    await drip?.close();
    await plain?.close();
  });

  test('embedded run: the job ends at its bound with what it measured; every socket is closed by then', async () => {
    const json = path.join(tempDir('probefleet-drip-'), 'run.json');
    const plan = await writePlan(dripPlan(drip.url, plain.url, 'local'));
    const { code, stdout, stderr } = await runCli(['run', plan, '--json', json], {
      timeoutMs: 60_000,
      env: { REDIS_URL: '' },
    });
    assert.equal(code, 1, `a job cut at its bound failed\n${stderr}`);
    assert.match(stderr, /: 1 of 2 jobs failed: 1 DEADLINE_EXCEEDED \(exit 1\)$/m);
    assertCutAtBound(runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport, drip.take());
    assert.match(stdout, /local\s+drip\s+load reused closed: DEADLINE_EXCEEDED/);
  });

  describe('through real worker processes on real Redis', needsRedis, () => {
    const prefix = testPrefix();
    let fleet: Fleet;
    const workers: CliProcess[] = [];
    before(() => {
      requireRedis();
      fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    });
    after(async () => {
      await Promise.all(workers.map((w) => w.stop('SIGKILL')));
      await fleet?.close();
      if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
    });

    test('a worker returns the job at its bound with a code, every socket closed by then', async () => {
      const worker = await startWorkerProcess('drip', TEST_REDIS_URL, prefix);
      workers.push(worker);
      const run = await submitRun(
        fleet,
        await parsePlan(dripPlan(drip.url, plain.url, 'drip'), 'drip.yaml'),
        'drip-run',
      );
      const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
      assert.ok(report);
      assert.deepEqual(report.unfinishedJobs, [], 'the job has a result, not a failure without a code');
      assertCutAtBound(report, drip.take());
      assert.ok(report.results.every((r) => r.worker.pid === worker.pid));
    });

    test('SIGTERM after the duration, with requests still trickling: the worker hands the job back within its grace period', async () => {
      const graceMs = 1000;
      const worker = await startWorkerProcess('drip-term', TEST_REDIS_URL, prefix, [
        '--shutdown-grace-seconds',
        String(graceMs / 1000),
      ]);
      workers.push(worker);
      const run = await submitRun(
        fleet,
        await parsePlan(dripPlan(drip.url, plain.url, 'drip-term', 60), 'drip.yaml'),
        'drip-term-run',
      );
      const until = Date.now() + 20_000;
      while (drip.open.size < DRIP_CONNECTIONS && Date.now() < until) await sleep(50);
      assert.equal(drip.open.size, DRIP_CONNECTIONS, 'the load job is running');
      // Past the 1 s duration: only requests in flight are left, and the stop must still cut them.
      await sleep(1500);
      const stoppedAt = Date.now();
      worker.child.kill('SIGTERM');
      const exit = await Promise.race([worker.exited, sleep(15_000, 'still running' as const)]);
      assert.equal(exit, 0, 'the worker exits 0 on SIGTERM');
      const seen = drip.take();
      assert.equal(seen.closedAt.length, DRIP_CONNECTIONS);
      for (const at of seen.closedAt)
        assert.ok(
          at <= stoppedAt + graceMs + CLOSE_TOLERANCE_MS,
          `a socket closed ${at - stoppedAt} ms after SIGTERM (grace ${graceMs} ms)`,
        );
      const [loadJob] = run.jobs.filter((j) => j.probe === 'load');
      assert.equal(
        await (await fleet.regionQueue('drip-term').getJob(loadJob.jobId))!.getState(),
        'waiting',
        'the probe stopped and the job went back to the queue, not forced out',
      );
    });
  });
});

test('a run whose load experiment asks HTTP/2 of an HTTP/1.1-only server prints every result, the failed one with a code', async () => {
  const plain = await startPlainServer();
  try {
    const json = path.join(tempDir('probefleet-h2-on-h1-'), 'run.json');
    const plan = await writePlan(`name: h2-on-h1
jobTimeoutSeconds: 30
targets: [{ name: plain, url: "${plain.url}" }]
experiments:
  - { probe: reuse, requests: 3, modes: [reused] }
  - { probe: load, modes: [h2], connections: 10, streams: 10, durationSeconds: 2 }
`);
    const { code, stdout, stderr } = await runCli(['run', plan, '--json', json], {
      timeoutMs: 60_000,
      env: { REDIS_URL: '' },
    });
    assert.equal(code, 1, stderr);
    assert.match(stderr, /: 1 of 2 jobs failed: 1 HTTP2_ERROR \(exit 1\)$/m);
    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    assert.equal(report.results.find((r) => r.probe === 'reuse')?.ok, true);
    const load = report.results.find((r): r is ResultOf<'load'> => r.probe === 'load');
    assert.equal(load?.error?.code, 'HTTP2_ERROR', load?.error?.message);
    assert.equal(load?.details?.stoppedBy, 'failures');
    assert.match(stdout, /Connection reuse/);
    assert.match(stdout, /local\s+plain\s+load h2 closed: HTTP2_ERROR/);
  } finally {
    await plain.close();
  }
});
