// Example plans run for real against a lab on free ports. The plans name the lab's fixed ports
// (18170 + offset) so `probefleet run --lab` works; here each URL's port is rewritten to the test
// lab's, so a test never collides with another run on 18170. Each region of the plan runs its
// jobs here in turn (as the emulated regions do), so a plan with regions makes a multi-region report.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createLogger } from '../../common/log.js';
import type { Plan } from '../../contracts/plan.js';
import { runReportSchema, type ProbeResult, type RunReport } from '../../contracts/result.js';
import { runEmbedded } from '../../coordinator/embedded-runner.js';
import { parsePlan, type LoadedPlan } from '../../coordinator/plan-loader.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { splitPlan } from '../../coordinator/split.js';
import { DEFAULT_LAB_PORT, LAB_SERVERS, type Lab } from '../../lab/index.js';
import { REPO_ROOT } from './repo.js';

const log = createLogger('test', 'silent');
const quiet = { start() {}, step() {}, done() {} };

/** An example plan's text with its lab URLs pointing at this lab. */
export async function examplePlanFor(lab: Lab, file: string): Promise<string> {
  const original = await readFile(path.join(REPO_ROOT, 'examples', file), 'utf8');
  return original.replace(/(?<=https?:\/\/)127\.0\.0\.1:(\d+)/g, (match, port: string) => {
    const spec = LAB_SERVERS.find((s) => DEFAULT_LAB_PORT + s.offset === Number(port));
    assert.ok(spec, `${file}: ${match} is not one of the lab's fixed ports`);
    return `127.0.0.1:${lab.servers[spec.name].port}`;
  });
}

/**
 * Lowers the plan's counts to at most these (`{requests: 20}`): the same experiments, smaller, for
 * tests that need a run of each kind rather than the article's numbers.
 */
function capCounts(plan: Plan, caps: Record<string, number>): Plan {
  return {
    ...plan,
    experiments: plan.experiments.map(
      (e) =>
        Object.fromEntries(
          Object.entries(e).map(([key, value]) => [
            key,
            typeof value === 'number' && key in caps ? Math.min(value, caps[key]) : value,
          ]),
        ) as typeof e,
    ),
  };
}

/** Runs every job of the plan, region by region, and returns the run report as its JSON reads back. */
export async function runPlanText(
  text: string,
  file: string,
  options: { runId?: string; caps?: Record<string, number> } = {},
): Promise<RunReport> {
  const parsed = await parsePlan(text, file);
  const loaded: LoadedPlan = options.caps ? { ...parsed, plan: capCounts(parsed.plan, options.caps) } : parsed;
  const runId = options.runId ?? 'example-run';
  const jobs = splitPlan(loaded, runId);
  const startedAt = new Date();
  const results: ProbeResult[] = [];
  for (const region of loaded.plan.regions) {
    results.push(
      ...(await runEmbedded(
        jobs.filter((j) => j.region === region),
        { log, region, progress: quiet },
      )),
    );
  }
  const report = buildRunReport({
    runId,
    mode: 'embedded',
    plan: loaded.plan,
    startedAt,
    finishedAt: new Date(),
    results,
  });
  return runReportSchema.parse(JSON.parse(JSON.stringify(report))) as RunReport;
}

export async function runExamplePlan(
  lab: Lab,
  file: string,
  options: { runId?: string; caps?: Record<string, number> } = {},
): Promise<RunReport> {
  return runPlanText(await examplePlanFor(lab, file), file, options);
}
