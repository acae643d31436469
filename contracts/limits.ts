// Per-job caps: the most one job may ask of a worker, whatever a plan (or a job in Redis) says.
// The plan refuses an experiment over a cap at validation, naming it; the worker checks each job
// again on receipt, and enforces the time and byte caps as the job runs.

export const JOB_LIMITS = {
  /** Requests one job may send. */
  requests: 10_000_000,
  /** Requests one job may have in flight at once. */
  concurrency: 10_000,
  /** A job's time bound, in seconds (the plan's `jobTimeoutSeconds`). */
  durationSeconds: 3_600,
  /** Bytes of one response a worker reads; past it the response is cut (RESPONSE_TOO_LARGE). */
  responseBytes: 64 * 1024 * 1024,
  /** Characters of a job's data as it comes from Redis (JSON): a worker fails a longer job before
   * parsing, checking or verifying it (JOB_DATA_TOO_LARGE). A real job is a few KB; a target's CA
   * bundle is the largest part. */
  jobDataChars: 1024 * 1024,
  /** Characters of a run's data on the runs queue (the parent "run" job: the plan as run and each
   * region's jobs, listed once; a schedule's: the plan) that the coordinator reads: 10,000 targets
   * from files and 10,000 jobs are about 3.4 MB, 100,000 jobs in one region about 14 MB. */
  runDataChars: 32 * 1024 * 1024,
  /** Probe jobs one BullMQ job (a batch, contracts/job.ts) may carry: they run one after another. */
  jobsPerBatch: 50,
  /** Workers of a region one job may be spread over (the load probe's `workers`): each takes a
   * shard, and they start together (docs/decisions/021-load-shards-across-workers.md). */
  shards: 64,
  /** The most a plan may set `maxDecodedBytes` to: bytes one response body may decode to (compression probe). */
  decodedBytes: 256 * 1024 * 1024,
} as const;

export type JobLimit = keyof typeof JOB_LIMITS;

/**
 * Limits on what a plan may be, checked while it is read and before anything is expanded, so a
 * hostile or mistaken plan costs seconds and a few hundred MB at most, not the coordinator's
 * memory. `plan validate` of a 1 MiB plan of 15,000 targets (the most a file may hold, refused
 * for its length) took 2.8 s and 211 MB peak RSS, Node's start included, at load 8 on the 2-vCPU
 * machine this was written on; a plan of 100 targets, each with headers, is under 30 KB.
 */
export const PLAN_LIMITS = {
  /** Bytes in a plan file, and in a CA file a plan names. */
  fileBytes: 1024 * 1024,
  /** Characters in any one string of a plan (a URL, a header value, the description, a key). */
  stringChars: 8192,
  /** Lists and mappings inside each other; a plan needs 4 (the plan, its targets, a target, its headers). */
  nestingDepth: 32,
  /** Items in any one list or mapping of a plan, checked before the schema reads them (the longest a plan may hold is 255). */
  collectionItems: 1_000,
  /** Jobs one run may make (regions x targets x variants), unless `--max-jobs` or PROBEFLEET_MAX_JOBS says otherwise.
   * A run of 100,000 is submitted, finished and shown in under 300 MB per process (its report
   * stored and read in parts: `node dist/bench/big-run.js`, bench/README.md); so is its comparison
   * with a baseline (`node dist/bench/compare-cost.js`). */
  jobsPerRun: 100_000,
  /** Jobs one embedded run may make (every job in one process, as region `local`), unless `--max-jobs`
   * or PROBEFLEET_MAX_JOBS says otherwise: it holds every result until its report is written
   * (peak RSS 333 MB at 10,000 one-request jobs, 887 MB at 50,000). */
  embeddedJobsPerRun: 10_000,
} as const;

/**
 * Limits on the targets a plan reads from files (`targetFiles`, docs/plan.md "Targets from files"),
 * checked as the files are read. Hand-written targets stay at most 100 (the plan schema); targets
 * from files are bounded here and, with every other target, by the jobs one run may make
 * (PLAN_LIMITS.jobsPerRun, `--max-jobs`). `plan validate` of 10,000 targets from one file (0.5 MB
 * of JSON) took 2.8 s and 134 MB peak RSS, Node's start included (docs/plan.md).
 */
export const TARGET_FILE_LIMITS = {
  /** Bytes in one target file (JSON or YAML): 10,000 targets with two labels each are about 1.5 MiB pretty-printed. */
  fileBytes: 4 * 1024 * 1024,
  /** Files one plan may read, every pattern's matches together. */
  files: 100,
  /** Targets from files, every file together. */
  targets: 10_000,
  /** Label names a plan may declare (`targetLabels`). */
  labelNames: 10,
  /** Distinct values of one label over all of a plan's targets: what one label adds to a
   * dashboard's `sum by (label)` stays a legend, not a wall. */
  labelValues: 100,
  /** Characters in one label value. */
  labelValueChars: 128,
} as const;

/** One thing a job asks for: how much, the parameter that decides it (where the plan's error
 * points), and how it follows from the parameters ("1000 connections x 1000 streams"). */
export interface Demand {
  value: number;
  param: string;
  how: string;
}

/** What one job of an experiment may send: its requests and how many are in flight at once. */
export interface JobDemands {
  requests: Demand;
  concurrency: Demand;
}

/** "over the per-job cap on concurrency (10000): 1000 connections x 1000 streams = 1000000" */
export function overCapMessage(limit: JobLimit, how?: string): string {
  return `over the per-job cap on ${limit} (${JOB_LIMITS[limit]})${how ? `: ${how}` : ''}`;
}

/** The caps a job's demands exceed, as messages with the parameter to point at. */
export function capsExceeded(demands: JobDemands): { param: string; message: string }[] {
  return (['requests', 'concurrency'] as const)
    .filter((limit) => demands[limit].value > JOB_LIMITS[limit])
    .map((limit) => ({
      param: demands[limit].param,
      message: overCapMessage(limit, `${demands[limit].how} = ${demands[limit].value}`),
    }));
}
