// What a comparison with a baseline costs as runs grow: one real run of the lab (two `reuse` jobs,
// `reused` and `new`, 20 requests each) copied to `--jobs` jobs over as many targets, eight times
// with totals moved a little from target to target and run to run; then the newest compared with
// the 7 before it by the coordinator's code (compareRuns). Prints its wall and CPU time, its rows
// and the size of its JSON: the figures behind COMPARED_JOBS_PER_RUN (docs/compare.md, "Big runs").
// Not part of `npm run bench`:
//   npm run build && node dist/bench/compare-cost.js [--jobs 10000]
import { parseArgs } from 'node:util';
import type { ProbeResult, RunReport } from '../contracts/result.js';
import { createLogger } from '../common/log.js';
import { compareRuns } from '../coordinator/compare/compare-runs.js';
import { startLab } from '../lab/index.js';
import { runPlanText } from '../test/helpers/example-runs.js';

const { values } = parseArgs({ options: { jobs: { type: 'string', default: '10000' } } });
const jobs = Number(values.jobs);
if (!(Number.isInteger(jobs) && jobs >= 2 && jobs % 2 === 0 && jobs <= 10_000))
  throw new Error(`--jobs: an even number from 2 to 10000 (the most a comparison takes), got ${values.jobs}`);

const log = createLogger('compare-cost', 'warn');
const lab = await startLab({ log });
let template: RunReport;
try {
  template = await runPlanText(
    'name: compare-cost\ntargets: [{ name: t, url: "lab:keepalive/" }]\n' +
      'experiments: [{ probe: reuse, requests: 20, modes: [reused, new] }]\n',
    'compare-cost.yaml',
    { lab, runId: 'compare-cost-20261200t000000z-abcd' },
  );
} finally {
  await lab.close();
}

/** Run `k` of eight: the template's two jobs for each of jobs / 2 targets, totals moved 0–12 %. */
function copyOf(k: number): RunReport {
  const runId = `compare-cost-2026120${k}t000000z-abcd`;
  const targets = Array.from({ length: jobs / 2 }, (_, t) => ({ ...template.plan.targets[0]!, name: `t${t}` }));
  const results: ProbeResult[] = targets.flatMap(({ name }, t) =>
    template.results.map((r) => {
      const factor = 1 + ((t * 7 + k) % 13) / 100;
      const samples = (r.details as { samples: { phases: { total?: number } }[] }).samples.map((s) => ({
        ...s,
        phases: { ...s.phases, ...(s.phases.total === undefined ? {} : { total: s.phases.total * factor }) },
      }));
      return {
        ...r,
        runId,
        jobId: r.jobId.replace(/^.*?\.local\.t\./, `${runId}.local.${name}.`),
        target: name,
        details: { ...r.details, samples },
      } as ProbeResult;
    }),
  );
  return { ...template, runId, plan: { ...template.plan, targets }, results, findings: [] };
}

const runs = Array.from({ length: 8 }, (_, k) => copyOf(k));
const started = performance.now();
const cpu = process.cpuUsage();
const comparison = compareRuns(runs.slice(1), runs[0]!);
const used = process.cpuUsage(cpu);
const json = JSON.stringify(comparison).length;
process.stdout.write(
  `| jobs per run | wall | CPU | quantities compared | not compared | JSON |\n|---:|---:|---:|---:|---:|---:|\n` +
    `| ${jobs.toLocaleString('en-US')} | ${((performance.now() - started) / 1000).toFixed(1)} s | ` +
    `${((used.user + used.system) / 1e6).toFixed(1)} s | ${comparison.quantities.length.toLocaleString('en-US')} | ` +
    `${comparison.notCompared.length.toLocaleString('en-US')} | ${(json / 1e6).toFixed(1)} MB |\n`,
);
