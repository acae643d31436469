// The request path compiled before the first real job: a fresh process runs its first requests
// through undici's parser, our handler and the sample code while V8 still interprets them, and
// measures each several times slower than a warm worker does. Warming up sends requests to a
// throwaway server in this process on loopback, never to a target, through the same code a job
// runs (executeJob with a `reuse` job), until the JIT has compiled it.
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobPayload } from '../contracts/job.js';
import type { Logger } from '../common/log.js';
import { executeJob } from './execute-job.js';

/**
 * Jobs of WARM_UP_REQUESTS each, until no job has been 5% faster than the best so far for
 * SETTLED_AFTER jobs in a row (the JIT is done), within MAX_JOBS and MAX_MS. On the 2-vCPU VM
 * it takes 20-30 jobs, ~0.5 s (bench/README.md).
 */
const WARM_UP_REQUESTS = 200;
const SETTLED_AFTER = 8;
const MAX_JOBS = 60;
const MAX_MS = 2_000;
const BODY = 'warm-up response..\n';
// Headers like a real server's (nginx's set), so that the parser's paths for them are compiled too.
const RESPONSE = Buffer.from(
  'HTTP/1.1 200 OK\r\nServer: warm-up\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\nContent-Type: text/html\r\n' +
    `Content-Length: ${BODY.length}\r\nLast-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\nConnection: keep-alive\r\n` +
    `ETag: "0-13"\r\nAccept-Ranges: bytes\r\n\r\n${BODY}`,
);

/** A keep-alive HTTP/1.1 server that answers every request head with the same 19-byte body. */
async function throwawayServer(): Promise<net.Server> {
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end !== -1; end = pending.indexOf('\r\n\r\n')) {
        pending = pending.slice(end + 4);
        socket.write(RESPONSE);
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return server;
}

/**
 * Runs the warm-up jobs (region `region`, so executeJob accepts them, under the embedded run's
 * target policy: loopback allowed, whatever the caller's policy, as no request leaves the
 * process). A failure is logged and ignored: a worker that could not warm up still measures,
 * only its first jobs less well. Returns how many warm-up jobs ran (0 when it failed).
 */
export async function warmUpRequestPath(region: string, log: Logger): Promise<number> {
  const started = performance.now();
  let server: net.Server | undefined;
  try {
    server = await throwawayServer();
    const { port } = server.address() as net.AddressInfo;
    const job = {
      schema: 'probefleet.job/v1',
      jobId: 'warm-up',
      runId: 'warm-up',
      plan: 'warm-up',
      region,
      // Our own server on loopback: never through a proxy the environment names.
      target: { name: 'warm-up', url: `http://127.0.0.1:${port}/`, proxy: 'none' },
      probe: 'reuse',
      params: { requests: WARM_UP_REQUESTS, modes: ['reused'], timeoutMs: 5_000, tlsResume: false, client: 'auto' },
      variant: { mode: 'reused', scheme: 'http' },
      timeLimitMs: 30_000,
    } satisfies JobPayload;
    const quiet = log.child({ warmUp: true }, { level: 'warn' });
    let best = Number.POSITIVE_INFINITY;
    let jobs = 0;
    for (let stale = 0; stale < SETTLED_AFTER && jobs < MAX_JOBS && performance.now() - started < MAX_MS; jobs++) {
      const result = await executeJob(job, { region, log: quiet });
      if (!result.ok) throw new Error(`${result.error?.code}: ${result.error?.message}`);
      const median = result.summary.phases.total!.p50;
      stale = median < best * 0.95 ? 0 : stale + 1;
      best = Math.min(best, median);
      // Lets the compiler's background threads finish between jobs.
      await sleep(0);
    }
    log.debug({ jobs, ms: Math.round(performance.now() - started) }, 'request path warmed up');
    return jobs;
  } catch (err) {
    // Info, not warn: in a region's namespace loopback may be down, and nothing is wrong with the run.
    log.info({ err }, 'warming up the request path failed; the first jobs may measure slower');
    return 0;
  } finally {
    server?.close();
  }
}
