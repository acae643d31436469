// A benchmark child process: enqueues a plan's jobs into Redis the way the coordinator does and
// prints how long it took as JSON on stdout. Its CPU time and peak RSS are the coordinator's.
//   flow:    coordinator/flow.ts submitRun, what `probefleet run --redis` does: split the plan,
//            then one BullMQ flow (a parent "run" job, one child per job)
//   addBulk: the same children (flowOf: same data and options) without the parent, Queue.addBulk
//            per region queue: what the enqueue target names
// argv: redis URL, mode, plan YAML.
import { performance } from 'node:perf_hooks';
import { createLogger } from '../common/log.js';
import { openFleet } from '../coordinator/fleet.js';
import { flowOf, submitRun } from '../coordinator/flow.js';
import { parsePlan } from '../coordinator/plan-loader.js';
import { runIdFor, splitPlan } from '../coordinator/split.js';
import { DEFAULT_QUEUE_PREFIX, regionOfQueue } from '../contracts/queues.js';
import type { RunJobData } from '../contracts/run-job.js';

export type EnqueueMode = 'flow' | 'addBulk';

export interface EnqueueTiming {
  jobs: number;
  /** splitPlan alone (the flow's submit splits again, inside its own time). */
  splitMs: number;
  /** flow: submitRun (split + flow); addBulk: the addBulk calls alone. */
  enqueueMs: number;
}

const [url, mode, planYaml] = process.argv.slice(2) as [string, EnqueueMode, string];
// The benchmark's plans make up to 100,000 jobs: ten times the default limit, on purpose.
const loaded = await parsePlan(planYaml, 'bench-enqueue.yaml', { maxJobs: 100_000 });
const runId = runIdFor(loaded.plan.name, new Date());
const fleet = openFleet({ redis: { url }, prefix: DEFAULT_QUEUE_PREFIX, log: createLogger('bench-enqueue', 'warn') });
try {
  let start = performance.now();
  const jobs = splitPlan(loaded, runId);
  const splitMs = performance.now() - start;
  start = performance.now();
  if (mode === 'flow') {
    await submitRun(fleet, loaded, runId);
  } else {
    // Only the flow's children are used: the parent's data never reaches Redis here.
    const children = flowOf({ runId } as RunJobData, jobs).children!;
    const byRegion = new Map<string, typeof children>();
    for (const child of children) {
      const region = regionOfQueue(child.queueName)!;
      if (!byRegion.has(region)) byRegion.set(region, []);
      byRegion.get(region)!.push(child);
    }
    for (const [region, bulk] of byRegion)
      await fleet.regionQueue(region).addBulk(bulk.map(({ name, data, opts }) => ({ name, data, opts })));
  }
  const timing: EnqueueTiming = { jobs: jobs.length, splitMs, enqueueMs: performance.now() - start };
  process.stdout.write(JSON.stringify(timing));
} finally {
  await fleet.close();
}
