// A benchmark child process: enqueues a plan's jobs into Redis the way the coordinator does and
// prints how long it took as JSON on stdout. Its CPU time and peak RSS are the coordinator's.
//   flow:    coordinator/flow.ts submitRun, what `probefleet run --redis` does: split the plan,
//            add the run's parent job, then its jobs as its children in batches (addBulk)
//   addBulk: the same jobs (runJobOf: same data and options) without the parent, one
//            Queue.addBulk per region queue: what BullMQ alone does with them
// argv: redis URL, mode, plan YAML.
import { performance } from 'node:perf_hooks';
import { boundHeapGrowth } from '../common/heap-growth.js';
import { createLogger } from '../common/log.js';
import { openFleet } from '../coordinator/fleet.js';
import { runJobOf, submitRun } from '../coordinator/flow.js';
import { parsePlan } from '../coordinator/plan-loader.js';
import { runIdFor, splitPlan } from '../coordinator/split.js';
import { DEFAULT_QUEUE_PREFIX } from '../contracts/queues.js';
import type { JobPayload } from '../contracts/job.js';

export type EnqueueMode = 'flow' | 'addBulk';

export interface EnqueueTiming {
  jobs: number;
  /** splitPlan alone (the flow's submit splits again, inside its own time). */
  splitMs: number;
  /** flow: submitRun (split + flow); addBulk: the addBulk calls alone. */
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
  const jobCount = splitPlan(loaded, runId).length; // dropped at once: the flow splits again
  const splitMs = performance.now() - start;
  start = performance.now();
  if (mode === 'flow') {
    await submitRun(fleet, loaded, runId);
  } else {
    const byRegion = new Map<string, JobPayload[]>();
    for (const job of splitPlan(loaded, runId)) {
      if (!byRegion.has(job.region)) byRegion.set(job.region, []);
      byRegion.get(job.region)!.push(job);
    }
    for (const [region, regionJobs] of byRegion)
      await fleet.regionQueue(region).addBulk(
        regionJobs.map((job) => {
          const {
            opts: { parent: _, ...opts },
            ...rest
          } = runJobOf(job, DEFAULT_QUEUE_PREFIX);
          return { ...rest, opts };
        }),
      );
  }
  const timing: EnqueueTiming = { jobs: jobCount, splitMs, enqueueMs: performance.now() - start };
  process.stdout.write(JSON.stringify(timing));
} finally {
  await fleet.close();
}
