// A benchmark child process: enqueues a plan's jobs into Redis the way the coordinator does and
// prints how long it took as JSON on stdout. Its CPU time and peak RSS are the coordinator's.
//   batched: coordinator/flow.ts submitRun, what `probefleet run --redis` does: split the plan,
//            add the run's parent job, then its jobs as its children in batches of probe jobs,
//            as many per BullMQ job as jobsPerBatchFor gives
//   per-job: the same with one probe job per BullMQ job (`jobsPerBatch: 1`), as a run of fewer
//            than 128 jobs per region goes
// argv: redis URL, mode, plan YAML.
import { performance } from 'node:perf_hooks';
import { boundHeapGrowth } from '../common/heap-growth.js';
import { createLogger } from '../common/log.js';
import { openFleet } from '../coordinator/fleet.js';
import { submitRun } from '../coordinator/flow.js';
import { parsePlan } from '../coordinator/plan-loader.js';
import { runIdFor, splitPlan } from '../coordinator/split.js';
import { DEFAULT_QUEUE_PREFIX } from '../contracts/queues.js';

export type EnqueueMode = 'batched' | 'per-job';

export interface EnqueueTiming {
  jobs: number;
  /** Probe jobs per BullMQ job, as the run was submitted. */
  jobsPerBatch: number;
  /** splitPlan alone (the submit splits again, inside its own time). */
  splitMs: number;
  /** submitRun: split, the parent, the batches. */
  enqueueMs: number;
}

// The heap setting of the processes that submit (`run --redis`, the coordinator).
boundHeapGrowth();
const [url, mode, planYaml] = process.argv.slice(2) as [string, EnqueueMode, string];
// The benchmark's plans make up to 100,000 jobs: ten times the default limit, on purpose.
const loaded = await parsePlan(planYaml, 'bench-enqueue.yaml', { maxJobs: 100_000 });
const runId = runIdFor(loaded.plan.name, new Date());
const fleet = openFleet({ redis: { url }, prefix: DEFAULT_QUEUE_PREFIX, log: createLogger('bench-enqueue', 'warn') });
try {
  let start = performance.now();
  const jobCount = splitPlan(loaded, runId).length; // dropped at once: the submit splits again
  const splitMs = performance.now() - start;
  start = performance.now();
  const { data } = await submitRun(fleet, loaded, runId, mode === 'per-job' ? { jobsPerBatch: 1 } : {});
  const timing: EnqueueTiming = {
    jobs: jobCount,
    jobsPerBatch: data.jobsPerBatch,
    splitMs,
    enqueueMs: performance.now() - start,
  };
  process.stdout.write(JSON.stringify(timing));
} finally {
  await fleet.close();
}
