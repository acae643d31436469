// Hostile and broken lab targets: every one yields a result with its own error code within the
// job's time bound, through the worker path in this process and through a real `probefleet
// worker` process on real Redis, which stays up with its memory bounded (the lab's 1 GiB body).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { ErrorCode } from '../../contracts/common.js';
import type { ProbeKind } from '../../contracts/probes/index.js';
import type { ProbeResult } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { waitForRun } from '../../coordinator/distributed-run.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { submitRun } from '../../coordinator/flow.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { startLab, type Lab, type LabServerName } from '../../lab/index.js';
import { HUGE_BODY_BYTES } from '../../lab/servers/huge-body.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';

const log = createLogger('test', 'silent');
const quiet = { update() {}, done() {} };

/** Each job's time bound; every case must end well within it. */
const JOB_TIMEOUT_SECONDS = 15;
/** Per-request bound of every probe here: the silent and trickling servers fail after it. */
const REQUEST_TIMEOUT_MS = 1000;

const PROBE_PARAMS: Record<Extract<ProbeKind, 'reuse' | 'tls' | 'http2'>, string> = {
  reuse: `requests: 3, modes: [reused], timeoutMs: ${REQUEST_TIMEOUT_MS}`,
  tls: `samples: 2, versions: ["1.3"], resumption: false, timeoutMs: ${REQUEST_TIMEOUT_MS}`,
  http2: `repeats: 1, concurrent: 2, timeoutMs: ${REQUEST_TIMEOUT_MS}`,
};

/** The lab server, the probe that meets it, and the code its result must carry (docs/lab.md, "Hostile and broken targets"). */
const CASES: { server: LabServerName; probe: keyof typeof PROBE_PARAMS; code: ErrorCode; params?: string }[] = [
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
];

/** One target and one experiment per case, all in `region`. */
function hostilePlan(lab: Lab, region: string): string {
  const targets = CASES.map(({ server }) => {
    const tls = lab.servers[server].url.startsWith('https:') ? `, tls: { ca: "${lab.caFile}" }` : '';
    return `  - { name: ${server}, url: "${lab.url(server)}"${tls} }`;
  });
  const experiments = CASES.map(
    ({ server, probe, params }) => `  - { probe: ${probe}, targets: [${server}], ${params ?? PROBE_PARAMS[probe]} }`,
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

function assertCase(result: ProbeResult | undefined, server: string, code: ErrorCode): void {
  assert.ok(result, `a result for ${server}`);
  assert.equal(result.ok, false, `${server} fails`);
  assert.equal(result.error?.code, code, `${server}: ${result.error?.message}`);
  const tookMs = Date.parse(result.finishedAt) - Date.parse(result.startedAt);
  assert.ok(tookMs < JOB_TIMEOUT_SECONDS * 1000, `${server} ended within the job's time bound (took ${tookMs} ms)`);
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

  for (const { server, probe, code } of CASES) {
    test(`${server}, met by the ${probe} probe: ${code} within the job's time bound`, async () => {
      const [job] = (await jobsOf(hostilePlan(lab, 'local'))).filter((j) => j.target.name === server);
      const result = await executeJob(job, { region: 'local', log });
      assertCase(result, server, code);
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

    test('every case gets its code, the worker stays up, its memory stays far under the 1 GiB body', async (t) => {
      worker = await startWorkerProcess('hostile', TEST_REDIS_URL, prefix);
      const before = await memoryOf(worker.pid);
      const run = await submitRun(fleet, await parsePlan(hostilePlan(lab, 'hostile'), 'hostile.yaml'), 'hostile-run');
      const report = await waitForRun(fleet, run.data, { log, progress: quiet, pollMs: 200 });
      assert.ok(report);
      assert.deepEqual(report.unfinishedJobs, []);
      for (const { server, code } of CASES) {
        assertCase(
          report.results.find((r) => r.target === server),
          server,
          code,
        );
      }
      assert.equal(
        report.results.find((r) => r.target === 'huge-body')?.worker.pid,
        worker.pid,
        'measured by the worker process',
      );

      assert.equal(worker.child.exitCode, null, 'the worker is still running');
      const { peak } = await memoryOf(worker.pid);
      const growth = peak - before.rss;
      t.diagnostic(
        `worker RSS at start ${(before.rss / 2 ** 20).toFixed(0)} MiB, peak ${(peak / 2 ** 20).toFixed(0)} MiB`,
      );
      assert.ok(
        growth < HUGE_BODY_BYTES / 4,
        `peak RSS grew by ${(growth / 2 ** 20).toFixed(0)} MiB (the body is ${HUGE_BODY_BYTES / 2 ** 30} GiB)`,
      );

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
