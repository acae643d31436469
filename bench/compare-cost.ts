// What a comparison with a baseline costs as runs grow, as a user runs it: one real run of the lab
// (two `reuse` jobs, `reused` and `new`, 20 requests each) copied to `--jobs` jobs over targets and
// regions (10,000 jobs a region), eight times with totals moved a little from target to target and run to run, each
// written as a run JSON; then `probefleet compare` of the newest with the 7 before it, timed from
// process start to exit with its peak RSS. Prints its wall and CPU time, its memory, its verdicts,
// what it listed and the size of its JSON (docs/compare.md, "Big runs"). Not part of `npm run bench`:
//   npm run build && node dist/bench/compare-cost.js [--jobs 10000]
import { spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { comparisonSchema } from '../contracts/comparison.js';
import { headOf, type ProbeResult, type RunReport } from '../contracts/result.js';
import { createLogger } from '../common/log.js';
import { type RunParts, runJsonText } from '../coordinator/run-parts.js';
import { startLab } from '../lab/index.js';
import { runPlanText } from '../test/helpers/example-runs.js';
import { thousands } from '../common/plural.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_JOBS = 100_000;
const { values } = parseArgs({ options: { jobs: { type: 'string', default: '10000' } } });
const jobs = Number(values.jobs);
if (!(Number.isInteger(jobs) && jobs >= 2 && jobs % 2 === 0 && jobs <= MAX_JOBS))
  throw new Error(`--jobs: an even number from 2 to ${MAX_JOBS} (a run's default job limit), got ${values.jobs}`);

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

const RESULTS_PER_PAGE = 1_000;

/** Regions the copies spread over: a plan holds at most 10,100 targets, and 100,000 jobs of two
 * per target and region need 50,000 places. */
const REGIONS = Array.from({ length: Math.max(1, Math.ceil(jobs / 10_000)) }, (_, r) => `r${r}`);
const targetCount = Math.ceil(jobs / 2 / REGIONS.length);

/** Run `k` of eight (0 the newest): the template's two jobs for each region and target, jobs in
 * all, totals moved 0–12 %, made a page at a time. */
function copyOf(k: number): RunParts {
  const runId = `compare-cost-2026120${k}t000000z-abcd`;
  const targets = Array.from({ length: targetCount }, (_, t) => ({ ...template.plan.targets[0]!, name: `t${t}` }));
  const startedAt = new Date(Date.parse(template.startedAt) - k * 86_400_000).toISOString();
  /** The two jobs of place p: region p / targetCount, target p % targetCount. */
  const resultsOf = (p: number): ProbeResult[] =>
    template.results.map((r) => {
      const [region, name] = [REGIONS[Math.floor(p / targetCount)]!, `t${p % targetCount}`];
      const factor = 1 + ((p * 7 + k) % 13) / 100;
      const samples = (r.details as { samples: { phases: { total?: number } }[] }).samples.map((s) => ({
        ...s,
        phases: { ...s.phases, ...(s.phases.total === undefined ? {} : { total: s.phases.total * factor }) },
      }));
      return {
        ...r,
        runId,
        jobId: r.jobId.replace(/^.*?\.local\.t\./, `${runId}.${region}.${name}.`),
        region,
        target: name,
        details: { ...r.details, samples },
      } as ProbeResult;
    });
  const plan = { ...template.plan, regions: REGIONS, targets };
  const head = headOf({ ...template, runId, startedAt, plan, results: [], findings: [] });
  const places = jobs / 2;
  return {
    head,
    async *pages() {
      for (let p = 0; p < places; p += RESULTS_PER_PAGE / 2) {
        const end = Math.min(places, p + RESULTS_PER_PAGE / 2);
        yield Array.from({ length: end - p }, (_, i) => resultsOf(p + i)).flat();
      }
    },
  };
}

const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-compare-cost-'));
try {
  const files: string[] = [];
  for (let k = 0; k < 8; k++) {
    const file = path.join(dir, `run-${k}.json`);
    await pipeline(runJsonText(copyOf(k)), createWriteStream(file));
    files.push(file);
  }
  const out = path.join(dir, 'comparison.json');
  const timeFile = path.join(dir, 'time.txt');
  const started = performance.now();
  const compared = spawnSync(
    '/usr/bin/time',
    [
      '-f',
      '%U %S %M',
      '-o',
      timeFile,
      process.execPath,
      'bin/probefleet.js',
      'compare',
      ...files.slice(1),
      files[0]!,
      '--json',
      out,
    ],
    { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  const wallMs = performance.now() - started;
  if (compared.status !== 0) throw new Error(`probefleet compare exited with ${compared.status}: ${compared.stderr}`);
  const [user, system, maxRssKb] = (await readFile(timeFile, 'utf8')).trim().split('\n').pop()!.split(' ').map(Number);
  const comparison = comparisonSchema.parse(JSON.parse(await readFile(out, 'utf8')));
  const { summary: v, omitted } = comparison;
  const count = thousands;
  const runMb = (await stat(files[0]!)).size / 1e6;
  process.stdout.write(
    `Each run JSON ${runMb.toFixed(0)} MB; \`probefleet compare\` of 7 earlier runs and the new one, start to exit.\n\n` +
      '| jobs per run | wall | CPU | peak RSS | regressed / improved / unchanged | quantities listed | not compared (listed + omitted) | JSON |\n' +
      '|---:|---:|---:|---:|---:|---:|---:|---:|\n' +
      `| ${count(jobs)} | ${(wallMs / 1000).toFixed(1)} s | ${(user! + system!).toFixed(1)} s | ${(maxRssKb! / 1024).toFixed(0)} MB | ` +
      `${count(v.regressed)} / ${count(v.improved)} / ${count(v.unchanged)} | ${count(comparison.quantities.length)} | ` +
      `${count(comparison.notCompared.length)} + ${count(omitted.notCompared)} | ${((await stat(out)).size / 1e6).toFixed(1)} MB |\n`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
