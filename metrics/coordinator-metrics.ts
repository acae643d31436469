// The coordinator's own metrics, on a registry of its own (never prom-client's global one):
// queue depths and connected workers per region, whether Redis answers and persists, the errors
// Redis gave it, and the outcomes, durations and lost workers of the runs it finished. Names and labels:
// contracts/metric-names.ts. A scrape never waits for Redis: queue depths are read in the
// background (refresh), within a bound, and /metrics serves the last reading.
import type { Queue } from 'bullmq';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { COORDINATOR_METRICS as M, JOB_OUTCOMES, QUEUE_STATES, REDIS_PERSISTENCE } from '../contracts/metric-names.js';
import type { RunInPages } from '../contracts/result.js';
import type { Logger } from '../common/log.js';
import { settlesWithin } from '../common/settle.js';
import { metricsOf } from './prom.js';
import { countRedisErrors, type RedisErrorCounter } from './redis-metrics.js';

export type RedisPersistence = (typeof REDIS_PERSISTENCE)[number];

export interface CoordinatorMetrics {
  registry: Registry;
  /** A finished run's jobs, counted a page of results at a time (a run's parts, coordinator/run-parts.ts). */
  recordRun(run: RunInPages): Promise<void>;
  /** Reads queue depths and worker counts from Redis, waiting at most `boundMs`; a reading still
   * under way is not started twice. Without an answer the queue series go (rather than go stale)
   * and probefleet_redis_up is 0. */
  refresh(boundMs: number): Promise<void>;
  setPersistence(persistence: RedisPersistence): void;
  /** Counts an error from Redis (probefleet_redis_errors_total). */
  redisError: RedisErrorCounter;
}

/** What the metrics read of the fleet (coordinator/fleet.ts `Fleet`): named here so that metrics/
 * does not import the coordinator above it. */
export interface RegionQueues {
  regionQueue(region: string): Pick<Queue, 'getJobCounts' | 'getWorkersCount'>;
}

type QueueReading = Map<string, { counts: Record<string, number>; workers: number }>;

export function createCoordinatorMetrics(
  fleet: RegionQueues,
  regions: () => Promise<string[]>,
  log: Logger,
): CoordinatorMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const {
    queueJobs,
    queueWorkers,
    redisUp,
    redisPersistence: persistence,
    jobsFinished: jobs,
    jobsStalled: stalled,
    runsFinished: runs,
    runDuration: duration,
  } = metricsOf(M, registry);
  redisUp.set(0);
  const redisError = countRedisErrors(registry);

  const show = (reading: QueueReading | undefined) => {
    queueJobs.reset();
    queueWorkers.reset();
    redisUp.set(reading ? 1 : 0);
    for (const [region, { counts, workers }] of reading ?? []) {
      for (const state of QUEUE_STATES) queueJobs.set({ region, state }, counts[state] ?? 0);
      queueWorkers.set({ region }, workers);
    }
  };
  let reading: Promise<QueueReading> | undefined;
  let lastProblem = '';

  return {
    registry,
    redisError,
    async refresh(boundMs) {
      reading ??= (async () => {
        const byRegion: QueueReading = new Map();
        for (const region of await regions()) {
          const queue = fleet.regionQueue(region);
          const [counts, workers] = await Promise.all([queue.getJobCounts(...QUEUE_STATES), queue.getWorkersCount()]);
          byRegion.set(region, { counts, workers });
        }
        return byRegion;
      })().finally(() => (reading = undefined));
      let answer: QueueReading | undefined;
      let problem = `no answer within ${boundMs} ms`;
      await settlesWithin(
        reading.then(
          (r) => (answer = r),
          (err: Error) => (problem = err.message),
        ),
        boundMs,
      );
      show(answer);
      if (!answer && problem !== lastProblem) log.warn({ err: problem }, 'cannot read queue depths from Redis');
      lastProblem = answer ? '' : problem;
    },
    setPersistence(found) {
      for (const p of REDIS_PERSISTENCE) persistence.set({ persistence: p }, p === found ? 1 : 0);
    },
    async recordRun({ head: report, pages }) {
      for (const region of report.plan.regions) {
        for (const outcome of JOB_OUTCOMES) jobs.inc({ region, outcome }, 0);
        stalled.inc({ region }, 0);
      }
      for await (const page of pages())
        for (const r of page) {
          jobs.inc({ region: r.region, outcome: r.ok ? 'ok' : 'error' });
          if (r.workersLost) stalled.inc({ region: r.region }, r.workersLost);
        }
      for (const u of report.unfinishedJobs) {
        jobs.inc({ region: u.region, outcome: u.status === 'failed' ? 'failed' : 'not_run' });
        if (u.workersLost) stalled.inc({ region: u.region }, u.workersLost);
      }
      runs.inc({ outcome: report.unfinishedJobs.length === 0 ? 'complete' : 'partial' });
      duration.observe((Date.parse(report.finishedAt) - Date.parse(report.startedAt)) / 1000);
    },
  };
}
