// `probefleet coordinator`, long-running: turns fired schedules into runs, turns each finished
// flow into a stored run report compared with the previous run of its plan, stops waiting for
// regions at a run's deadline, and serves /metrics and /healthz.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { JOB_NAMES, reportKeys, RUNS_QUEUE } from '../contracts/queues.js';
import { scheduledRunDataSchema } from '../contracts/run-job.js';
import { JobSignatureError, openSignedData } from '../common/job-signature.js';
import type { Logger } from '../common/log.js';
import { bullmqConnection } from '../common/redis.js';
import { settlesWithin } from '../common/settle.js';
import { compareWithPrevious } from './compare/with-previous.js';
import { createCoordinatorMetrics } from './coordinator-metrics.js';
import { MetricsPusher, type PushgatewaySettings } from '../worker/metrics/pusher.js';
import { pushRunMetrics } from '../worker/metrics/run-metrics.js';
import type { Fleet } from './fleet.js';
import { submitRun } from './flow.js';
import { summarizeReport } from './report-store.js';
import { expireRunIfDue, finishRun, runDataOf } from './run-finisher.js';
import { runIdFor, TooManyJobsError } from './split.js';

export interface CoordinatorOptions {
  fleet: Fleet;
  log: Logger;
  /** Where /metrics and /healthz are served; port 0 picks a free one. */
  listen: { host: string; port: number };
  /** How often runs past their deadline are looked for. @defaultValue 5000 */
  sweepIntervalMs?: number;
  /** Regions whose queue depths are reported even before a run was submitted to them. */
  regions?: string[];
  /** Where each finished run's last-run metrics are pushed (worker/metrics/run-metrics.ts). */
  pushgateway?: PushgatewaySettings;
  /** The most jobs a fired schedule's run may make; a plan over it fails the firing. @defaultValue PLAN_LIMITS.jobsPerRun */
  maxJobs?: number;
}

export interface RunningCoordinator {
  /** Base URL of the HTTP endpoints. */
  url: string;
  close(): Promise<void>;
}

/** How long closing waits for a run being finished before giving up on it (it is redone). */
const CLOSE_GRACE_MS = 10_000;

export async function startCoordinator(options: CoordinatorOptions): Promise<RunningCoordinator> {
  const { fleet, log } = options;
  const knownRegions = async () =>
    [
      ...new Set([...(options.regions ?? []), ...(await fleet.client.smembers(reportKeys.regions(fleet.prefix)))]),
    ].sort();
  const metrics = createCoordinatorMetrics(fleet, knownRegions, log);
  const pusher = options.pushgateway ? new MetricsPusher(options.pushgateway, log, metrics.registry) : undefined;

  const fireSchedule = async (job: Job) => {
    let opened: unknown;
    try {
      // The plan in a schedule becomes signed jobs: it must itself be signed with the key.
      opened = openSignedData(job.data, fleet.jobKey);
    } catch (err) {
      if (err instanceof JobSignatureError)
        throw new UnrecoverableError(`schedule ${job.repeatJobKey ?? job.id}: ${err.message}`);
      throw err;
    }
    const parsed = scheduledRunDataSchema.safeParse(opened);
    if (!parsed.success)
      throw new UnrecoverableError(
        `schedule ${job.repeatJobKey ?? job.id} holds no valid plan: ${parsed.error.issues[0]?.message}`,
      );
    const { plan, tls, deadlineSeconds } = parsed.data;
    // The run id comes from the time the schedule fired, so redoing this job adds nothing twice.
    const firedAt = new Date(job.timestamp + (job.opts.delay ?? 0));
    const loaded = { plan, file: `schedule ${plan.name}`, tls, maxJobs: options.maxJobs };
    const run = await submitRun(fleet, loaded, runIdFor(plan.name, firedAt), { deadlineSeconds }).catch((err) => {
      // Over this coordinator's limit on jobs: firing again would fail again.
      throw err instanceof TooManyJobsError ? new UnrecoverableError(err.message) : err;
    });
    log.info(
      { schedule: job.repeatJobKey, runId: run.runId, jobs: run.jobs.length, added: run.added },
      'schedule fired: run submitted',
    );
    return { runId: run.runId, jobs: run.jobs.length };
  };

  const finish = async (job: Job) => {
    const { report, stored } = await finishRun(fleet, job);
    metrics.recordRun(report);
    // Idempotent: the `run` command that waited for this run pushes the same stored report.
    if (pusher) await pushRunMetrics(pusher, report, log);
    await compareWithPrevious(fleet.store, report, { log, ...(pusher ? { pusher } : {}) });
    const summary = summarizeReport(report);
    log.info({ ...summary, storedHere: stored }, 'run finished');
    return summary;
  };

  const worker = new Worker(
    RUNS_QUEUE,
    async (job: Job) => {
      if (job.name === JOB_NAMES.scheduledRun) return fireSchedule(job);
      if (job.name === JOB_NAMES.run) return finish(job);
      throw new UnrecoverableError(`unexpected job "${job.name}" in queue ${RUNS_QUEUE}`);
    },
    { connection: bullmqConnection(fleet.redis), prefix: fleet.prefix, concurrency: 4, name: 'probefleet-coordinator' },
  );
  worker.on('failed', (job, err) =>
    log.error({ jobId: job?.id, name: job?.name, reason: err.message }, 'runs job failed'),
  );
  worker.on('error', (err) => log.warn({ err: err.message }, 'coordinator worker error (reconnecting)'));

  const stopSweeping = new AbortController();
  const sweeping = (async () => {
    let lastProblem = '';
    while (!stopSweeping.signal.aborted) {
      try {
        for (const parent of await fleet.runs.getWaitingChildren(0, 999)) {
          if (parent.name !== JOB_NAMES.run) continue;
          const removed = await expireRunIfDue(parent, runDataOf(parent));
          if (removed > 0)
            log.warn(
              { runId: parent.id, jobs: removed },
              'deadline passed: jobs no worker took are reported as not run',
            );
        }
        lastProblem = '';
      } catch (err) {
        const problem = (err as Error).message;
        if (problem !== lastProblem) log.warn({ err: problem }, 'deadline sweep failed; retrying');
        lastProblem = problem;
      }
      await sleep(options.sweepIntervalMs ?? 5_000, undefined, { signal: stopSweeping.signal }).catch(() => {});
    }
  })();

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
    } else if (path === '/metrics') {
      metrics.registry
        .metrics()
        .then((text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text))
        .catch((err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`));
    } else if (path === '/healthz') {
      healthy(fleet, worker).then((problem) =>
        res.writeHead(problem ? 503 : 200, { 'content-type': 'text/plain' }).end(problem ? `${problem}\n` : 'ok\n'),
      );
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics or /healthz\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listen.port, options.listen.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.listen.host.includes(':') ? `[${options.listen.host}]` : options.listen.host;
  const url = `http://${host}:${port}`;
  await worker.waitUntilReady();
  log.info({ url, prefix: fleet.prefix }, 'coordinator ready');

  return {
    url,
    async close() {
      stopSweeping.abort();
      server.closeAllConnections();
      await Promise.all([new Promise((resolve) => server.close(resolve)), sweeping]);
      const closing = worker.close();
      if (!(await settlesWithin(closing, CLOSE_GRACE_MS))) await worker.close(true);
    },
  };
}

async function healthy(fleet: Fleet, worker: Worker): Promise<string | undefined> {
  if (!worker.isRunning()) return 'the runs worker is not running';
  let answer: string | undefined;
  const ping = fleet.client.ping().then(
    (pong) => (answer = pong),
    () => undefined,
  );
  await settlesWithin(ping, 1_000);
  return answer === 'PONG' ? undefined : 'redis does not answer';
}
