// A plan run across emulated regions: the plan is split for the harness's regions, and each
// region's jobs run inside that region's namespace (region-runner-entry.js, the embedded runner
// with the worker's code), one region after another so that measurements never share the CPU.
// The results make one run report, as a distributed run's would.
import type { ChildProcess } from 'node:child_process';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../common/log.js';
import { probeResultSchema, type ProbeResult, type RunReport } from '../contracts/result.js';
import type { LoadedPlan } from '../coordinator/loaded-plan.js';
import { buildRunReport } from '../coordinator/run-report.js';
import { splitPlan } from '../coordinator/split.js';
import type { EmulatedRegion, Regions } from './harness.js';

const RUNNER = fileURLToPath(new URL('./region-runner-entry.js', import.meta.url));

export interface FleetRunOptions {
  runId: string;
  log: Logger;
  /** Called as each region starts its jobs. */
  onRegion?: (region: EmulatedRegion, jobs: number) => void;
}

export async function runPlanInRegions(
  regions: Regions,
  loaded: LoadedPlan,
  options: FleetRunOptions,
): Promise<RunReport> {
  const plan = { ...loaded.plan, regions: regions.regions.map((r) => r.name) };
  const jobs = splitPlan({ ...loaded, plan }, options.runId);
  const startedAt = new Date();
  const results: ProbeResult[] = [];
  for (const region of regions.regions) {
    const mine = jobs.filter((job) => job.region === region.name);
    options.onRegion?.(region, mine.length);
    const child = regions.spawn(region.namespace, process.execPath, [RUNNER, region.name], {
      stdio: ['pipe', 'pipe', 'inherit'],
      realtime: true,
    });
    child.stdin!.end(JSON.stringify(mine));
    const [out, exit] = await Promise.all([text(child.stdout!), exitOf(child)]);
    if (exit !== 0) throw new Error(`the jobs of region ${region.name} did not run: their runner exited with ${exit}`);
    for (const raw of JSON.parse(out) as unknown[]) results.push(probeResultSchema.parse(raw) as ProbeResult);
    options.log.debug({ region: region.name, jobs: mine.length }, 'region done');
  }
  return buildRunReport({ runId: options.runId, mode: 'embedded', plan, startedAt, finishedAt: new Date(), results });
}

function exitOf(child: ChildProcess): Promise<number | string> {
  return new Promise((resolve) => {
    child.once('error', (err) => resolve(err.message));
    child.once('exit', (code, signal) => resolve(signal ?? code ?? 1));
  });
}
