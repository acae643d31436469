// What a comparison with a baseline costs as runs grow, as a user runs it: one real run of the lab
// (two `reuse` jobs, `reused` and `new`, 20 requests each) copied to `--jobs` jobs over targets and
// regions (10,000 jobs a region), eight times with totals moved a little from target to target and run to run, each
// written as a run JSON; then `probefleet compare` of the newest with the 7 before it, timed from
// process start to exit with its peak RSS. Prints its wall and CPU time, its memory, its verdicts,
// what it listed and the size of its JSON (docs/compare.md, "Big runs"). With `--from redis` the
// eight runs are stored instead in a redis-server of the bench's own, as a finisher stores them, and
// the comparison is the coordinator's step after it stores a run: `probefleet compare --redis URL
// --previous NEWEST --baseline 7` (the same call, reading each stored run a page at a time).
// Not part of `npm run bench`:
//   npm run build && node dist/bench/compare-cost.js [--jobs 10000] [--from files|redis]
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
import { Redis } from 'ioredis';
import { redisOptions } from '../common/redis.js';
import { redisMemory } from '../common/redis-errors.js';
import { DEFAULT_QUEUE_PREFIX } from '../contracts/queues.js';
import { ReportStore } from '../coordinator/report-store.js';
import { startBenchRedis } from './queue.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_JOBS = 100_000;
const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '10000' }, from: { type: 'string', default: 'files' } },
});
const jobs = Number(values.jobs);
if (!(Number.isInteger(jobs) && jobs >= 2 && jobs % 2 === 0 && jobs <= MAX_JOBS))
  throw new Error(`--jobs: an even number from 2 to ${MAX_JOBS} (a run's default job limit), got ${values.jobs}`);
if (values.from !== 'files' && values.from !== 'redis')
  throw new Error(`--from: "files" (run JSONs) or "redis" (stored runs), got ${values.from}`);

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
  const places = jobs / 2;
  const head = {
    ...headOf({ ...template, runId, startedAt, plan, results: [], findings: [] }),
    resultCount: jobs,
    okCount: places * template.results.filter((r) => r.ok).length,
  };
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

/** The compare command over the eight runs, written where it reads them: the files, or stored runs
 * in a redis-server of the bench's own (stopped by `close`). Also says how big a run is there. */
async function placeRuns(dir: string): Promise<{ args: string[]; runSize: string; close: () => Promise<void> }> {
  if (values.from === 'files') {
    const files: string[] = [];
    for (let k = 0; k < 8; k++) {
      const file = path.join(dir, `run-${k}.json`);
      await pipeline(runJsonText(copyOf(k)), createWriteStream(file));
      files.push(file);
    }
    const runMb = (await stat(files[0]!)).size / 1e6;
    return {
      args: [...files.slice(1), files[0]!],
      runSize: `Each run JSON ${runMb.toFixed(0)} MB`,
      close: async () => {},
    };
  }
  const redis = await startBenchRedis();
  const client = new Redis(redisOptions({ url: redis.url }));
  try {
    const store = new ReportStore(client, DEFAULT_QUEUE_PREFIX);
    const before = (await redisMemory(client)).usedBytes;
    let newest = '';
    for (let k = 7; k >= 0; k--) {
      const run = copyOf(k);
      const draft = store.draft(run.head.runId);
      for await (const page of run.pages()) await draft.add(page);
      await store.saveIfAbsent(run.head, draft);
      newest = run.head.runId;
    }
    const perRunMb = ((await redisMemory(client)).usedBytes - before) / 8 / 1e6;
    client.disconnect();
    return {
      args: ['--redis', redis.url, '--previous', newest, '--baseline', '7'],
      runSize: `Each stored run ${perRunMb.toFixed(0)} MB of Redis memory`,
      close: () => redis.stop(),
    };
  } catch (err) {
    client.disconnect();
    await redis.stop();
    throw err;
  }
}

const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-compare-cost-'));
try {
  const placed = await placeRuns(dir);
  const out = path.join(dir, 'comparison.json');
  const timeFile = path.join(dir, 'time.txt');
  const started = performance.now();
  const command = ['compare', ...placed.args, '--json', out];
  const compared = spawnSync(
    '/usr/bin/time',
    ['-f', '%U %S %M', '-o', timeFile, process.execPath, 'bin/probefleet.js', ...command],
    { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  const wallMs = performance.now() - started;
  await placed.close();
  if (compared.status !== 0) throw new Error(`probefleet compare exited with ${compared.status}: ${compared.stderr}`);
  const [user, system, maxRssKb] = (await readFile(timeFile, 'utf8')).trim().split('\n').pop()!.split(' ').map(Number);
  const comparison = comparisonSchema.parse(JSON.parse(await readFile(out, 'utf8')));
  const { summary: v, omitted } = comparison;
  const count = thousands;
  const shown = command.map((a) => (a.startsWith(dir) ? path.basename(a) : a)).join(' ');
  process.stdout.write(
    `${placed.runSize}; \`probefleet ${shown}\` (7 earlier runs and the new one), start to exit.\n\n` +
      '| jobs per run | wall | CPU | peak RSS | regressed / improved / unchanged | quantities listed | not compared (listed + omitted) | JSON |\n' +
      '|---:|---:|---:|---:|---:|---:|---:|---:|\n' +
      `| ${count(jobs)} | ${(wallMs / 1000).toFixed(1)} s | ${(user! + system!).toFixed(1)} s | ${(maxRssKb! / 1024).toFixed(0)} MB | ` +
      `${count(v.regressed)} / ${count(v.improved)} / ${count(v.unchanged)} | ${count(comparison.quantities.length)} | ` +
      `${count(comparison.notCompared.length)} + ${count(omitted.notCompared)} | ${((await stat(out)).size / 1e6).toFixed(1)} MB |\n`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
