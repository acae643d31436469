// Names of what distributed mode keeps in Redis: queues, job names and the keys of stored run
// reports. Coordinator and worker both derive them from here, so they always agree. Pure: no I/O.

/** Every key lives under this prefix. The `{...}` is a Redis Cluster hash tag: all of a flow's
 * queues (and the stored reports) hash to one slot, so a flow never crosses slots. */
export const DEFAULT_QUEUE_PREFIX = '{probefleet}';

/** The queue of parent "run" jobs and of fired schedules. */
export const RUNS_QUEUE = 'runs';

/** The queue of the runs' submission gates: one job per run being submitted, a child of the run's
 * parent job that holds it waiting until every probe job is in (coordinator/flow.ts). Nothing
 * takes jobs from it; the submitter removes each gate once its run's jobs are all added. */
export const SUBMISSIONS_QUEUE = 'submissions';

/** Job names, so one queue can hold more than one kind of job. */
export const JOB_NAMES = {
  /** The parent of a run's flow: processed once all its children are done. */
  run: 'run',
  /** A batch of probe jobs in a region's queue (contracts/job.ts, ProbeBatch). */
  probe: 'probe',
  /** What a job scheduler puts on the runs queue when it fires. */
  scheduledRun: 'scheduled-run',
  /** A run's submission gate in SUBMISSIONS_QUEUE. */
  submission: 'submission',
} as const;

const PREFIX_PATTERN = /^[^\s:{}]*\{[^\s:{}]+\}[^\s:{}]*$/;

/** Why a prefix is unusable, or undefined when it is fine. */
export function prefixProblem(prefix: string): string | undefined {
  if (!PREFIX_PATTERN.test(prefix)) {
    return `queue prefix "${prefix}" needs exactly one Redis Cluster hash tag such as "{probefleet}", and no ":" or spaces`;
  }
  return undefined;
}

/** BullMQ queue names may not contain ":"; region names (contracts/common.ts) never do. */
export function regionQueueName(region: string): string {
  return `probe.${region}`;
}

/** The region of a queue named by regionQueueName, or undefined. */
export function regionOfQueue(queueName: string): string | undefined {
  return queueName.startsWith('probe.') ? queueName.slice('probe.'.length) : undefined;
}

/** BullMQ's key of a job, `<prefix>:<queue>:<id>`, as `getChildrenValues()` and
 * `getDependencies()` name children. */
export function jobKey(prefix: string, queueName: string, jobId: string): string {
  return `${prefix}:${queueName}:${jobId}`;
}

/** Parses a key made by jobKey; the prefix never contains ":", queue names neither. */
export function parseJobKey(prefix: string, key: string): { queueName: string; jobId: string } | undefined {
  if (!key.startsWith(`${prefix}:`)) return undefined;
  const rest = key.slice(prefix.length + 1);
  const colon = rest.indexOf(':');
  return colon > 0 ? { queueName: rest.slice(0, colon), jobId: rest.slice(colon + 1) } : undefined;
}

/** BullMQ's keys of a queue's job schedulers: a sorted set of their ids scored by when each fires
 * next, and a hash per scheduler with its settings and its template's data. `schedule list` reads
 * them without BullMQ (coordinator/schedules.ts). */
export const schedulerKeys = {
  index: (prefix: string, queueName: string) => `${prefix}:${queueName}:repeat`,
  scheduler: (prefix: string, queueName: string, id: string) => `${prefix}:${queueName}:repeat:${id}`,
};

/** Keys of stored run reports. They sit under the same hash tag as the queues, and their
 * names cannot clash with BullMQ's (queue names never contain "~"). */
export const reportKeys = {
  /** The run report's head (RunReportHead JSON: the report without its results), with a TTL. A
   * report stored by an earlier version is the whole report JSON (`probefleet.run/v1`) here. */
  report: (prefix: string, runId: string) => `${prefix}:~run-report:${runId}`,
  /** List of the run report's results, each element a page (a JSON array of results), with the
   * head's TTL. Written under a draft key (reportDraft) and renamed to this with the head. */
  reportResults: (prefix: string, runId: string) => `${prefix}:~run-report-results:${runId}`,
  /** The lease of the one process finishing a run (its token, with a TTL it renews as it goes). */
  reportFinishing: (prefix: string, runId: string) => `${prefix}:~run-finishing:${runId}`,
  /** Where one finisher writes a report's result pages before they are stored (a TTL as a backstop). */
  reportDraft: (prefix: string, runId: string, finisher: string) => `${prefix}:~run-report-draft:${runId}:${finisher}`,
  /** Sorted set of run ids, scored by the run's start (ms since the epoch). */
  index: (prefix: string) => `${prefix}:~run-reports`,
  /** Hash of run id → one-line summary JSON, for `runs list` without reading whole reports. */
  summaries: (prefix: string) => `${prefix}:~run-summaries`,
  /** Set of regions that runs were submitted to, so the coordinator can report queue depths. */
  regions: (prefix: string) => `${prefix}:~regions`,
  /** Hash of job id → what became of it (ExpiredJobNote JSON), for the jobs of a run that a worker
   * had taken but that were taken off their queue at the run's deadline (their own keys go with
   * them). Read when the report is built, then removed; a TTL as a backstop. */
  expiredJobs: (prefix: string, runId: string) => `${prefix}:~run-expired:${runId}`,
  /** Hash of job id → probe result JSON: the results of a run's jobs, saved by the workers as their
   * jobs finish (worker/run-results.ts). Read when the report is built, then removed; a TTL (job
   * retention, renewed with every write) as a backstop. */
  results: (prefix: string, runId: string) => `${prefix}:~run-results:${runId}`,
  /** Hash of a job spread over several workers (its id, which holds the run's): when its shards
   * stop waiting for each other, which shard each worker took, and the instant they start
   * together (worker/shard-barrier.ts). A TTL past the job's bound. */
  shardBarrier: (prefix: string, partOf: string) => `${prefix}:~shards:${partOf}`,
  /** The comparison (`probefleet.compare/v3`) of a run with the previous run of its plan, with a TTL. */
  comparison: (prefix: string, runId: string) => `${prefix}:~run-comparison:${runId}`,
};

/** A job whose worker is lost (killed or hung: its lock expired) is put back in its queue this
 * many times; lost once more, it fails for good (BullMQ's `maxStalledCount`). */
export const JOB_STALLS_RETRIED = 1;
