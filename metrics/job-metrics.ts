// Metrics of a process that runs jobs: its results go into the cumulative `probes` registry,
// pushed as jobs finish (at most once per interval, pusher.ts) when a Pushgateway is configured;
// its own counters (jobs taken, jobs in flight, push failures) and prom-client's process metrics
// are served on /metrics. The two are kept apart so that no series reaches Prometheus twice
// (once scraped, once pushed).
import { hostname } from 'node:os';
import { collectDefaultMetrics, Registry, type Counter, type Gauge } from 'prom-client';
import { WORKER_JOB_OUTCOMES, WORKER_METRICS } from '../contracts/metric-names.js';
import type { ProbeResult, RunReport } from '../contracts/result.js';
import type { Logger } from '../common/log.js';
import { settlesWithin } from '../common/settle.js';
import { createProbeMetrics, type ProbeMetrics } from './probe-metrics.js';
import { metricOf } from './prom.js';
import { MetricsPusher, type CumulativeGroup, type PushgatewaySettings } from './pusher.js';
import { pushRunMetrics } from './run-metrics.js';

export type WorkerJobOutcome = (typeof WORKER_JOB_OUTCOMES)[number];

/** What the region worker tells its metrics about each probe job (worker/queue-worker.ts). A batch
 * that fails before its first job starts counts as one job. */
export interface JobObserver {
  started(): void;
  /** A job returned a result (it is recorded and pushed). */
  completed(result: ProbeResult): void;
  /** A job threw (its batch is retried, failed for good, or handed back on shutdown). */
  ended(outcome: Exclude<WorkerJobOutcome, 'completed'>): void;
}

export interface JobMetricsOptions {
  region: string;
  /** The `instance` of the pushed group: one per process that pushes for a region. @defaultValue the host name */
  instance?: string;
  pushgateway?: PushgatewaySettings;
  log: Logger;
}

export interface JobMetrics extends JobObserver {
  /** Records a result and pushes soon (what `completed` does, without the worker's job counters). */
  recordResult(result: ProbeResult): void;
  /** The process's own metrics, for /metrics. */
  registry: Registry;
  /** The cumulative probe metrics (pushed, not served). */
  probes: ProbeMetrics;
  pusher: MetricsPusher | undefined;
  /** Pushes the run's last-run groups (a no-op without a Pushgateway); never throws. False when
   * one failed. */
  pushRun(report: RunReport): Promise<boolean>;
  /** Waits (bounded) for the pushes still going. */
  close(boundMs?: number): Promise<void>;
}

/** How long closing waits for pushes still going: a down gateway costs its retries, not a hang. */
const CLOSE_BOUND_MS = 20_000;

export function createJobMetrics(options: JobMetricsOptions): JobMetrics {
  const { region, log } = options;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Jobs are counted here and handed to prom-client when it reads the metrics (`collect`): three
  // prom-client calls per job, each checking and hashing its labels, would be a measurable share of a
  // one-request job's CPU (bench/README.md, "Per job").
  let running = 0;
  const endedSinceRead = new Map<WorkerJobOutcome, number>();
  const end = (outcome: WorkerJobOutcome) => {
    running--;
    endedSinceRead.set(outcome, (endedSinceRead.get(outcome) ?? 0) + 1);
  };
  const jobs: Counter = metricOf(WORKER_METRICS.jobs, registry, () => {
    for (const [outcome, count] of endedSinceRead) jobs.inc({ region, outcome }, count);
    endedSinceRead.clear();
  });
  const inFlight: Gauge = metricOf(WORKER_METRICS.inFlight, registry, () => {
    inFlight.set({ region }, running);
  });
  for (const outcome of WORKER_JOB_OUTCOMES) jobs.inc({ region, outcome }, 0);

  // A bug in a mapping costs that result's metrics, never the job.
  const probes = createProbeMetrics((err, result) =>
    log.error({ err, jobId: result.jobId }, 'cannot record the result as metrics'),
  );
  const pusher = options.pushgateway ? new MetricsPusher(options.pushgateway, log, registry) : undefined;
  const group: CumulativeGroup | undefined = pusher?.cumulative(
    'probes',
    { region, instance: options.instance || hostname() },
    probes.registry,
  );
  const runPushes = new Set<Promise<unknown>>();
  const recordResult = (result: ProbeResult) => {
    probes.record(result);
    group?.schedule();
  };

  return {
    registry,
    probes,
    pusher,
    started: () => {
      running++;
    },
    completed(result) {
      end('completed');
      recordResult(result);
    },
    recordResult,
    ended: end,
    async pushRun(report) {
      if (!pusher) return true;
      const pushing = pushRunMetrics(pusher, report, log);
      runPushes.add(pushing);
      return pushing.finally(() => runPushes.delete(pushing));
    },
    async close(boundMs = CLOSE_BOUND_MS) {
      const pushing = Promise.all([group?.flush(), ...runPushes]).then(() => pusher?.close());
      if (!(await settlesWithin(pushing, boundMs))) log.warn({ boundMs }, 'stopped waiting for metrics pushes');
    },
  };
}
