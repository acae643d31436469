// The coordinator's own metrics, on a registry of its own (never prom-client's global one):
// queue depths and connected workers per region, read from Redis on each scrape, and the
// outcomes and durations of the runs it finished. Names and labels: contracts/metric-names.ts.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { COORDINATOR_METRICS as M, JOB_OUTCOMES, QUEUE_STATES } from '../contracts/metric-names.js';
import type { RunReport } from '../contracts/result.js';
import type { Logger } from '../common/log.js';
import type { Fleet } from './fleet.js';

/** Runs take from seconds (a short plan) to hours (many jobs per region). */
const RUN_DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600];

export interface CoordinatorMetrics {
  registry: Registry;
  recordRun(report: RunReport): void;
}

export function createCoordinatorMetrics(
  fleet: Fleet,
  regions: () => Promise<string[]>,
  log: Logger,
): CoordinatorMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  // One read of Redis per scrape, shared by the gauges (the registry collects them concurrently).
  let reading: Promise<Map<string, { counts: Record<string, number>; workers: number }>> | undefined;
  const readQueues = () =>
    (reading ??= (async () => {
      const byRegion = new Map<string, { counts: Record<string, number>; workers: number }>();
      try {
        for (const region of await regions()) {
          const queue = fleet.regionQueue(region);
          const [counts, workers] = await Promise.all([queue.getJobCounts(...QUEUE_STATES), queue.getWorkersCount()]);
          byRegion.set(region, { counts, workers });
        }
      } catch (err) {
        // A scrape while Redis is away shows no queue series rather than stale ones.
        log.warn({ err: (err as Error).message }, 'cannot read queue depths');
        byRegion.clear();
      }
      return byRegion;
    })().finally(() => (reading = undefined)));

  new Gauge({
    name: M.queueJobs.name,
    help: M.queueJobs.help,
    labelNames: M.queueJobs.labels,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [region, { counts }] of await readQueues()) {
        for (const state of QUEUE_STATES) this.set({ region, state }, counts[state] ?? 0);
      }
    },
  });
  new Gauge({
    name: M.queueWorkers.name,
    help: M.queueWorkers.help,
    labelNames: M.queueWorkers.labels,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [region, { workers }] of await readQueues()) this.set({ region }, workers);
    },
  });
  const jobs = new Counter({
    name: M.jobsFinished.name,
    help: M.jobsFinished.help,
    labelNames: M.jobsFinished.labels,
    registers: [registry],
  });
  const runs = new Counter({
    name: M.runsFinished.name,
    help: M.runsFinished.help,
    labelNames: M.runsFinished.labels,
    registers: [registry],
  });
  const duration = new Histogram({
    name: M.runDuration.name,
    help: M.runDuration.help,
    buckets: RUN_DURATION_BUCKETS,
    registers: [registry],
  });

  return {
    registry,
    recordRun(report) {
      for (const region of report.plan.regions) {
        for (const outcome of JOB_OUTCOMES) jobs.inc({ region, outcome }, 0);
      }
      for (const r of report.results) jobs.inc({ region: r.region, outcome: r.ok ? 'ok' : 'error' });
      for (const u of report.unfinishedJobs)
        jobs.inc({ region: u.region, outcome: u.status === 'failed' ? 'failed' : 'not_run' });
      runs.inc({ outcome: report.unfinishedJobs.length === 0 ? 'complete' : 'partial' });
      duration.observe((Date.parse(report.finishedAt) - Date.parse(report.startedAt)) / 1000);
    },
  };
}
