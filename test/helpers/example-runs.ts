// Example plans run for real against a lab on free ports: their `lab:` targets resolved to this
// test's lab, as `probefleet run --lab` resolves them to its own. Each region of the plan runs its
// jobs here in turn (as the emulated regions do), so a plan with regions makes a multi-region report.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createLogger } from '../../common/log.js';
import type { Plan } from '../../contracts/plan.js';
import { runReportSchema, type ProbeResult, type RunReport } from '../../contracts/result.js';
import { runEmbedded } from '../../coordinator/embedded-runner.js';
import type { LoadedPlan } from '../../coordinator/loaded-plan.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { splitPlan } from '../../coordinator/split.js';
import { withLabTargets } from '../../coordinator/lab-targets.js';
import type { Lab } from '../../lab/index.js';
import { REPO_ROOT } from './repo.js';

const log = createLogger('test', 'silent');
const quiet = { start() {}, step() {}, done() {} };

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
  options: { runId?: string; caps?: Record<string, number>; lab?: Lab } = {},
): Promise<RunReport> {
  const parsed = withLabTargets(await parsePlan(text, file), options.lab?.address, 'this test has no lab');
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
  const text = await readFile(path.join(REPO_ROOT, 'examples', file), 'utf8');
  return runPlanText(text, file, { ...options, lab });
}
