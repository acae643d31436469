// `probefleet coordinator`, long-running: turns fired schedules into runs, turns each finished
// flow into a stored run report compared with the earlier runs of its plan, stops waiting for
// regions at a run's deadline, and serves /metrics and /healthz. Whatever Redis does, /metrics
// answers (from memory) and closing ends within a bound.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { JOB_LIMITS } from '../contracts/limits.js';
import { JOB_NAMES, reportKeys, RUNS_QUEUE } from '../contracts/queues.js';
import { bullmqKeep } from '../contracts/retention.js';
import { scheduledRunDataSchema } from '../contracts/run-job.js';
import { JobSignatureError, openSignedData } from '../common/job-signature.js';
import type { Logger } from '../common/log.js';
import { bullmqWorkerConnection, checkPersistence, pingWithin, redisNow, warnOnRedisErrors } from '../common/redis.js';
import { DEFAULT_REDIS_TIMEOUT_SECONDS } from '../common/redis-defaults.js';
import { Backoff, describeFull, isFull, isRedisFull, redisMemory } from '../common/redis-errors.js';
import { settlesWithin } from '../common/settle.js';
import { FleetWorker, refuseUnreadable } from '../worker/fleet-worker.js';
import { comparisonsOneAtATime, type ComparisonsOneAtATime } from './compare/with-baseline.js';
import { createCoordinatorMetrics, type CoordinatorMetrics } from '../metrics/coordinator-metrics.js';
import { MetricsPusher, type PushgatewaySettings } from '../metrics/pusher.js';
import { pushRunMetrics } from '../metrics/run-metrics.js';
import type { Fleet } from './fleet.js';
import { submitRun } from './flow.js';
import { summarizeReport } from './report-store.js';
import { expireRunIfDue, finishRun, runDataOf } from './run-finisher.js';
import { planOfFiring, ScheduleError } from './schedules.js';
import { runIdFor, TooManyJobsError } from './split.js';

export interface CoordinatorOptions {
  fleet: Fleet;
  log: Logger;
  /** Where /metrics and /healthz are served; port 0 picks a free one. */
  listen: { host: string; port: number };
  /** How often runs past their deadline are looked for, and queue depths read for /metrics. @defaultValue 5000 */
  sweepIntervalMs?: number;
  /** How long a read of Redis for /metrics or the persistence check may take. @defaultValue 10000 */
  redisTimeoutMs?: number;
  /** Regions whose queue depths are reported even before a run was submitted to them. */
  regions?: string[];
  /** Where each finished run's last-run metrics are pushed (metrics/run-metrics.ts). */
  pushgateway?: PushgatewaySettings;
  /** The most jobs a fired schedule's run may make; a plan over it fails the firing. @defaultValue PLAN_LIMITS.jobsPerRun */
  maxJobs?: number;
  /** The heap of the thread each run's comparison is made in, MB. @defaultValue COMPARISON_HEAP_MB */
  comparisonHeapMb?: number;
}

export interface RunningCoordinator {
  /** Base URL of the HTTP endpoints. */
  url: string;
  close(): Promise<void>;
}

/** How long closing waits for a run being finished before giving up on it (it is redone). */
const CLOSE_GRACE_MS = 10_000;
/** How long closing waits for a sweep under way (it may be waiting for Redis). */
const SWEEP_STOP_MS = 2_000;
/** How long closing with nothing in flight waits for Redis to see the coordinator leave. */
const LEAVE_MS = 2_000;

export async function startCoordinator(options: CoordinatorOptions): Promise<RunningCoordinator> {
  const { fleet, log } = options;
  const redisTimeoutMs = options.redisTimeoutMs ?? DEFAULT_REDIS_TIMEOUT_SECONDS * 1000;
  const knownRegions = async () =>
    [
      ...new Set([...(options.regions ?? []), ...(await fleet.client.smembers(reportKeys.regions(fleet.prefix)))]),
    ].sort();
  const metrics = createCoordinatorMetrics(fleet, knownRegions, log);
  const pusher = options.pushgateway ? new MetricsPusher(options.pushgateway, log, metrics.registry) : undefined;

  // Aborted when the coordinator closes: its sweeps end, and a comparison being made stops.
  const stop = new AbortController();
  const comparisons = comparisonsOneAtATime({ signal: stop.signal, heapMb: options.comparisonHeapMb });
  // Runs jobs Redis was too full for, by job id: tried again later (backing off), and said on /healthz.
  const refused = new Map<string, { backoff: Backoff; problem: string }>();
  const worker = runsWorker(fleet, log, metrics, async (job: Job, token: string | undefined) => {
    try {
      const done = await (async () => {
        if (job.name === JOB_NAMES.scheduledRun) return fireSchedule(fleet, job, options.maxJobs, log);
        if (job.name === JOB_NAMES.run) return finish(fleet, job, metrics, pusher, log, comparisons);
        throw new UnrecoverableError(`unexpected job "${job.name}" in queue ${RUNS_QUEUE}`);
      })();
      refused.delete(job.id ?? '');
      return done;
    } catch (err) {
      if (!isRedisFull(err)) {
        refused.delete(job.id ?? '');
        throw err;
      }
      // Failing it would end the run without a stored report (or skip the firing): it waits
      // instead, and is done once Redis has room.
      metrics.redisError(err);
      const entry = refused.get(job.id ?? '') ?? { backoff: new Backoff(), problem: '' };
      const delayMs = entry.backoff.failed();
      entry.problem = `${job.name} ${job.id}: ${(err as Error).message}`;
      refused.set(job.id ?? '', entry);
      log.warn(
        { jobId: job.id, name: job.name, err: (err as Error).message, retryInMs: delayMs },
        'Redis is full: trying again later',
      );
      await job.moveToDelayed(Date.now() + delayMs, token);
      throw new DelayedError();
    }
  });

  const everyInterval = () =>
    sleep(options.sweepIntervalMs ?? 5_000, undefined, { signal: stop.signal }).catch(() => {});
  const sweeping = sweepDeadlines(fleet, log, stop.signal, everyInterval);
  const refreshing = (async () => {
    while (!stop.signal.aborted) {
      await metrics.refresh(redisTimeoutMs);
      await everyInterval();
    }
  })();

  const server = await serveEndpoints(options.listen, metrics, () =>
    healthy(
      fleet,
      worker,
      [...refused.values()].map((r) => r.problem),
    ),
  );
  const { port } = server.address() as AddressInfo;
  const host = options.listen.host.includes(':') ? `[${options.listen.host}]` : options.listen.host;
  const url = `http://${host}:${port}`;
  const close = async () => {
    stop.abort();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    if (!(await settlesWithin(Promise.all([sweeping, refreshing]), SWEEP_STOP_MS)))
      log.warn('a deadline sweep was still waiting for Redis; left behind');
    // A run being finished gets the grace period; otherwise only Redis saying goodbye is waited for.
    await worker.closeWithin(worker.held > 0 ? CLOSE_GRACE_MS : LEAVE_MS, log);
    await pusher?.close();
  };
  // A Redis of another kind than its URL says ends the coordinator (RedisKindError).
  await worker.start(fleet.redis).catch(async (err: Error) => {
    await close();
    throw err;
  });
  await warnUnlessPersistent(fleet, log, redisTimeoutMs).then((found) => metrics.setPersistence(found));
  log.info({ url, prefix: fleet.prefix }, 'coordinator ready');
  return { url, close };
}

/** The worker of the `runs` queue: fired schedules and finished flows. */
function runsWorker(
  fleet: Fleet,
  log: Logger,
  metrics: CoordinatorMetrics,
  handle: (job: Job, token: string | undefined) => Promise<unknown>,
): FleetWorker {
  const worker = new FleetWorker(
    RUNS_QUEUE,
    async (job: Job, token: string | undefined) => {
      refuseUnreadable(job, log);
      return handle(job, token);
    },
    {
      connection: bullmqWorkerConnection(fleet.redis),
      prefix: fleet.prefix,
      concurrency: 4,
      name: 'probefleet-coordinator',
      // A run's data lists every job, and its plan every target (thousands from target files).
      maxDataChars: JOB_LIMITS.runDataChars,
      // Runs remove themselves once reported (coordinator/flow.ts); this keeps fired schedules
      // and failed runs as the fleet's retention says.
      removeOnComplete: bullmqKeep(fleet.retention.jobs),
      removeOnFail: bullmqKeep(fleet.retention.jobs),
    },
  );
  worker.on('failed', (job, err) =>
    log.error({ jobId: job?.id, name: job?.name, reason: err.message }, 'runs job failed'),
  );
  warnOnRedisErrors(worker, log, 'coordinator', metrics.redisError);
  return worker;
}

/** A schedule fired: its signed plan becomes a run. */
async function fireSchedule(fleet: Fleet, job: Job, maxJobs: number | undefined, log: Logger) {
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
  const { plan, deadlineSeconds } = parsed.data;
  // The run id comes from the time the schedule fired, so redoing this job adds nothing twice.
  const firedAt = new Date(job.timestamp + (job.opts.delay ?? 0));
  // Its target files, read again now (a file that cannot be read fails this firing, not the schedule).
  const loaded = await planOfFiring(parsed.data, maxJobs).catch((err: Error) => {
    throw err instanceof ScheduleError ? new UnrecoverableError(err.message) : err;
  });
  const run = await submitRun(fleet, loaded, runIdFor(plan.name, firedAt), { deadlineSeconds }).catch((err) => {
    // Over this coordinator's limit on jobs: firing again would fail again.
    throw err instanceof TooManyJobsError ? new UnrecoverableError(err.message) : err;
  });
  log.info(
    { schedule: job.repeatJobKey, runId: run.runId, jobs: run.jobs.length, added: run.added },
    'schedule fired: run submitted',
  );
  return { runId: run.runId, jobs: run.jobs.length };
}

/** A run's children are done: its report, counted and pushed, and compared with its baseline. */
async function finish(
  fleet: Fleet,
  job: Job,
  metrics: CoordinatorMetrics,
  pusher: MetricsPusher | undefined,
  log: Logger,
  comparisons: ComparisonsOneAtATime,
) {
  const { head, stored } = await finishRun(fleet, job);
  const run = await fleet.store.parts(head.runId);
  if (!run) throw new Error(`run ${head.runId}: its stored report is gone (removed since it was stored)`);
  await metrics.recordRun(run);
  // Idempotent: the `run` command that waited for this run pushes the same stored report.
  if (pusher) await pushRunMetrics(pusher, run, log);
  await comparisons(fleet, head, { log, ...(pusher ? { pusher } : {}) });
  const summary = summarizeReport(head);
  log.info({ ...summary, storedHere: stored }, 'run finished');
  return summary;
}

/** Expires runs past their deadline, every interval until `signal`. Runs whose data cannot be read
 * are skipped (and said once each), so one bad run never stops the others from expiring. A run's
 * data (each region's jobs: ~1.5 MB for 10,000 in each) is read once for its deadline, which never
 * changes, and again only once that has passed. */
async function sweepDeadlines(
  fleet: Fleet,
  log: Logger,
  signal: AbortSignal,
  everyInterval: () => Promise<void>,
): Promise<void> {
  const badRuns = new Set<string>();
  /** Run id → its deadline (ms on Redis's clock); +Infinity for a waiting job that is not a run. */
  const deadlines = new Map<string, number>();
  let lastProblem = '';
  while (!signal.aborted) {
    try {
      const waiting = new Set(await fleet.runs.getRanges(['waiting-children'], 0, 999));
      for (const id of deadlines.keys()) if (!waiting.has(id)) deadlines.delete(id);
      const now = (await redisNow(fleet.client)).getTime();
      for (const id of waiting) {
        if (badRuns.has(id) || now < (deadlines.get(id) ?? Number.NEGATIVE_INFINITY)) continue;
        const parent = await fleet.runs.getJob(id);
        if (!parent) continue;
        if (parent.name !== JOB_NAMES.run) {
          deadlines.set(id, Number.POSITIVE_INFINITY);
          continue;
        }
        let data;
        try {
          data = runDataOf(parent);
        } catch (err) {
          badRuns.add(id);
          log.error({ runId: id, err: (err as Error).message }, 'deadline sweep skips a run it cannot read');
          continue;
        }
        deadlines.set(id, Date.parse(data.deadline));
        const removed = await expireRunIfDue(fleet, parent, data, now);
        if (removed > 0)
          log.warn({ runId: id, jobs: removed }, 'deadline passed: jobs without a result are reported as not run');
      }
      lastProblem = '';
    } catch (err) {
      const problem = (err as Error).message;
      if (problem !== lastProblem) log.warn({ err: problem }, 'deadline sweep failed; retrying');
      lastProblem = problem;
    }
    await everyInterval();
  }
}

/** /metrics (from memory) and /healthz, listening once this resolves. */
async function serveEndpoints(
  listen: CoordinatorOptions['listen'],
  metrics: CoordinatorMetrics,
  health: () => Promise<string | undefined>,
): Promise<http.Server> {
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
      health().then((problem) =>
        res.writeHead(problem ? 503 : 200, { 'content-type': 'text/plain' }).end(problem ? `${problem}\n` : 'ok\n'),
      );
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics or /healthz\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, resolve);
  });
  return server;
}

/** Reads how Redis persists (within the bound) and says loudly what a restart would lose. */
async function warnUnlessPersistent(
  fleet: Fleet,
  log: Logger,
  boundMs: number,
): Promise<'aof' | 'rdb' | 'none' | 'unknown'> {
  let check: Awaited<ReturnType<typeof checkPersistence>> | undefined;
  await settlesWithin(
    checkPersistence(fleet.client).then((c) => (check = c)),
    boundMs,
  );
  const found = check ?? { persistence: 'unknown' as const, detail: `no answer within ${boundMs} ms` };
  const loses = 'a Redis restart loses every schedule, the runs in flight and the stored reports';
  if (found.persistence === 'aof') log.info({ redis: found.detail }, 'Redis persists every write (append-only file)');
  else if (found.persistence === 'rdb')
    log.warn(
      { redis: found.detail },
      'Redis persists by snapshots only: a restart loses what was written since the last one (a schedule added, runs in flight); use appendonly yes (docs/distributed.md, "Operating it")',
    );
  else if (found.persistence === 'none')
    log.warn(
      { redis: found.detail },
      `REDIS DOES NOT PERSIST: ${loses}; use appendonly yes (docs/distributed.md, "Operating it")`,
    );
  else log.warn({ redis: found.detail }, `cannot tell whether Redis persists; without it ${loses}`);
  return found.persistence;
}

/** Why the coordinator cannot do its work, or undefined: Redis does not answer, or refuses its
 * writes as full (runs are not finished, schedules do not fire); `refused`: jobs Redis was too full for. */
async function healthy(fleet: Fleet, worker: FleetWorker, refused: string[]): Promise<string | undefined> {
  if (!worker.isRunning()) return 'the runs worker is not running';
  if (!(await pingWithin(fleet.client, 1_000))) return 'redis does not answer';
  let memory;
  await settlesWithin(
    redisMemory(fleet.client).then((m) => (memory = m)),
    1_000,
  );
  const problems = [
    ...(memory && isFull(memory) ? [`${describeFull(memory)}: writes are refused`] : []),
    ...(worker.takeProblem ? [worker.takeProblem] : []),
    ...refused,
  ];
  return problems.length > 0 ? problems.join('\n') : undefined;
}
