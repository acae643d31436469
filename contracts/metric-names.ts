// Metric and label names, in one place for the processes that export them and for the
// dashboards and alert rules that read them. Prometheus conventions: base units, `_seconds`,
// `_total`; labels are bounded (regions, states, outcomes), never run or job ids.

export interface MetricSpec {
  name: string;
  help: string;
  labels: readonly string[];
}

/** Served by `probefleet coordinator` on /metrics. */
export const COORDINATOR_METRICS = {
  queueJobs: {
    name: 'probefleet_queue_jobs',
    help: 'Jobs in a region queue, by state (waiting, active, delayed, prioritized, failed)',
    labels: ['region', 'state'],
  },
  queueWorkers: {
    name: 'probefleet_queue_workers',
    help: 'Workers connected to a region queue',
    labels: ['region'],
  },
  jobsFinished: {
    name: 'probefleet_run_jobs_total',
    help: 'Jobs of finished runs, by outcome: ok, error (the target failed; a result), failed (no result), not_run',
    labels: ['region', 'outcome'],
  },
  runsFinished: {
    name: 'probefleet_runs_total',
    help: 'Runs turned into stored reports, by outcome: complete (every job has a result) or partial',
    labels: ['outcome'],
  },
  runDuration: {
    name: 'probefleet_run_duration_seconds',
    help: 'Time from a run being submitted to its report',
    labels: [],
  },
} as const satisfies Record<string, MetricSpec>;

/** States of a region queue reported by probefleet_queue_jobs. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;

/** Outcomes of probefleet_run_jobs_total. */
export const JOB_OUTCOMES = ['ok', 'error', 'failed', 'not_run'] as const;
