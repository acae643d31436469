// A run as big as a fleet's night, end to end through real processes: a redis-server of its own,
// Debian's nginx as every target, one `probefleet worker` per region, a `probefleet coordinator`,
// and the run submitted and waited for as users run it. Prints each target as met or missed:
//   - submit rate as the user sees it: `probefleet run PLAN --redis URL --detach`, process start
//     to exit (workers not started yet, so the submit has the machine);
//   - peak RSS of the `run --redis` process that waits for the run and writes its report, of the
//     coordinator and of each worker;
//   - the report ready (the `run` process has written it and exited) after the last job finished;
//   - Redis memory per finished job once the report is stored (what the retention settings keep);
//   - `probefleet report FILE` of the run JSON written: its time and peak RSS (read in parts).
// With --next-night, the plan runs again as the next night's run, compared by the coordinator with
// a baseline of 7 (the first run and 6 copies of it stored as the nights before): the coordinator's
// peak RSS through that night, its comparison stored after the report, and the slowest answer of
// its /metrics while it compared (Prometheus gives up on a scrape after 10 s by default).
// Not part of `npm run bench` (it takes minutes); run it when a big run is in question:
//   npm run build && node dist/bench/big-run.js [--jobs 100000] [--submit-only | --next-night]
// Up to 500,000 jobs a region has 10,000 (100 targets); past that, 50 regions of more targets,
// those past the 100 a plan lists by hand read from a file (`targetFiles`).
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startNginx } from '../common/nginx-server.js';
import { topLevelArrayMembers } from '../coordinator/report/json-members.js';
import { redisOptions } from '../common/redis.js';
import { redisMemory } from '../common/redis-errors.js';
import { TIED_TO_THIS_PROCESS } from '../regions/system.js';
import { processMemoryKb } from './measure.js';
import { queuePlanYaml, startBenchRedis, type PlanShape } from './queue.js';
import { thousands } from '../common/plural.js';
import { freeLoopbackPort } from '../common/redis-server.js';
import { DEFAULT_QUEUE_PREFIX } from '../contracts/queues.js';
import { ReportStore } from '../coordinator/report-store.js';

const CLI = fileURLToPath(new URL('../../bin/probefleet.js', import.meta.url));
const TARGETS = {
  submitJobsPerSecond: 30_000,
  peakRssMb: 300,
  reportSeconds: 30,
};
/** Jobs per region up to MAX_REGIONS: one worker each, as many regions as make the run. */
const JOBS_PER_REGION = 10_000;
const MAX_REGIONS = 50;
/** A region's jobs per target: 50 experiments x 2 modes. */
const JOBS_PER_TARGET = 100;

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '100000' },
    'submit-only': { type: 'boolean', default: false },
    'next-night': { type: 'boolean', default: false },
  },
});
const jobs = Number(values.jobs);
const regionCount = Math.min(MAX_REGIONS, jobs / JOBS_PER_REGION);
const targetCount = jobs / regionCount / JOBS_PER_TARGET;
if (!(Number.isInteger(regionCount) && Number.isInteger(targetCount) && regionCount >= 1 && jobs <= 1_000_000))
  throw new Error(
    `--jobs: a multiple of ${JOBS_PER_REGION} up to 500,000, or of ${MAX_REGIONS * JOBS_PER_TARGET} up to 1,000,000; got ${values.jobs}`,
  );
const shape: PlanShape = { regions: regionCount, targets: 100, experiments: 50, modes: ['reused', 'new'] };
const regions = Array.from({ length: shape.regions }, (_, i) => `r${i}`);
const say = (line: string) => process.stderr.write(`big-run: ${line}\n`);

/** How a CLI process ended: its code, when, after how long, its peak RSS (through GNU time, when
 * asked) and the end of what it said. */
interface Ended {
  code: number | null;
  endedAt: number;
  seconds: number;
  peakRssMb?: number;
  stderr: string;
}

/** A CLI process tied to this one. */
function cli(args: string[], timeFile?: string): { child: ChildProcess; done: Promise<Ended> } {
  const start = performance.now();
  const timed = timeFile ? ['/usr/bin/time', '-f', '%M', '-o', timeFile] : [];
  const [launcher, ...launcherArgs] = TIED_TO_THIS_PROCESS;
  const child = spawn(launcher!, [...launcherArgs, ...timed, process.execPath, CLI, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8000)));
  const done = new Promise<Ended>((resolve) =>
    child.once('exit', async (code) => {
      const endedAt = Date.now();
      const seconds = (performance.now() - start) / 1000;
      // No file when GNU time could not run: the peak is then unknown, not a hang.
      const peakKb = timeFile
        ? Number((await readFile(timeFile, 'utf8').catch(() => '')).trim().split('\n').pop()) || undefined
        : undefined;
      resolve({ code, endedAt, seconds, ...(peakKb ? { peakRssMb: Math.round(peakKb / 1024) } : {}), stderr });
    }),
  );
  return { child, done };
}

/** The run JSON's results counted and their last `finishedAt`, a result at a time, as `report`
 * reads it (coordinator/report/json-members.ts): a million results are a file longer than a string may be. */
async function scanRunJson(file: string): Promise<{ results: number; unfinished: number; lastFinishedAt: number }> {
  const scanned = { results: 0, unfinished: 0, lastFinishedAt: 0 };
  for await (const member of topLevelArrayMembers(createReadStream(file, { encoding: 'utf8' }), 'results')) {
    if ('rest' in member) {
      scanned.unfinished = (JSON.parse(member.rest) as { unfinishedJobs: unknown[] }).unfinishedJobs.length;
      continue;
    }
    scanned.results++;
    const { finishedAt } = JSON.parse(member.element) as { finishedAt: string };
    scanned.lastFinishedAt = Math.max(scanned.lastFinishedAt, Date.parse(finishedAt));
  }
  return scanned;
}

/** The nights before the next night's run, stored as copies of the first run ('big'): with it,
 * the baseline of 7 the coordinator compares the next night's run with. */
async function storeEarlierNights(store: ReportStore, nights: number): Promise<void> {
  const first = (await store.parts('big'))!;
  const before = Array.from({ length: nights }, (_, i) => {
    const runId = `big-earlier-${i + 1}`;
    return { daysBefore: i + 1, runId, draft: store.draft(runId) };
  });
  // The first run read once, a page at a time, into every copy.
  for await (const page of first.pages())
    for (const { runId, draft } of before)
      await draft.add(page.map((r) => ({ ...r, runId, jobId: r.jobId.replace(/^big\./, `${runId}.`) })));
  const { head } = first;
  for (const { daysBefore, runId, draft } of before) {
    const earlier = (at: string) => new Date(Date.parse(at) - daysBefore * 86_400_000).toISOString();
    await store.saveIfAbsent(
      { ...head, runId, startedAt: earlier(head.startedAt), finishedAt: earlier(head.finishedAt) },
      draft,
    );
  }
}

/** The plan run again ('big-next'), its report waited for as before, then its comparison: what the
 * coordinator's night with a baseline costs it. */
async function nextNight(plan: string, common: string[], coordinatorPid: number, metricsUrl: string) {
  const store = new ReportStore(client, DEFAULT_QUEUE_PREFIX);
  await storeEarlierNights(store, 6);
  // The coordinator's peak RSS from here on: Linux resets VmHWM on "5" (proc(5), clear_refs).
  await writeFile(`/proc/${coordinatorPid}/clear_refs`, '5');
  let peakMb = 0;
  let slowestScrapeMs = 0;
  let scrapes = 0;
  const failedScrapes: string[] = [];
  const scrape = async () => {
    const started = performance.now();
    scrapes++;
    try {
      const answer = await fetch(metricsUrl, { signal: AbortSignal.timeout(30_000) });
      await answer.text();
      if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
    } catch (err) {
      const { message, cause } = err as Error & { cause?: Error };
      failedScrapes.push(`${message}${cause ? ` (${cause.message})` : ''}`);
    }
    slowestScrapeMs = Math.max(slowestScrapeMs, performance.now() - started);
  };
  const readPeak = () => (peakMb = Math.max(peakMb, Math.round(processMemoryKb(coordinatorPid).hwm / 1024)));
  let watching = true;
  const watched = (async () => {
    while (watching) {
      readPeak();
      await scrape();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();
  say('the next night: the same plan again, compared with a baseline of 7');
  const submitted = await cli(['run', plan, ...common, '--detach', '--run-id', 'big-next']).done;
  if (submitted.code !== 0) throw new Error(`run --detach exited ${submitted.code}: ${submitted.stderr}`);
  const waited = await cli(['run', plan, ...common, '--run-id', 'big-next', '--json', path.join(dir, 'next.json')])
    .done;
  if (waited.code !== 0) throw new Error(`run exited ${waited.code}: ${waited.stderr}`);
  let comparison = await store.getComparison('big-next');
  while (!comparison) {
    if (Date.now() - waited.endedAt > 30 * 60_000) throw new Error('no comparison stored 30 minutes after the report');
    await new Promise((resolve) => setTimeout(resolve, 250));
    comparison = await store.getComparison('big-next');
  }
  const comparedSeconds = (Date.now() - waited.endedAt) / 1000;
  watching = false;
  await watched;
  readPeak();
  const { regressed, improved, unchanged } = comparison.summary;
  return [
    {
      what: 'the next night: comparison stored after its report (the coordinator, a baseline of 7 runs of this size)',
      result: `${comparedSeconds.toFixed(1)} s (${thousands(regressed)} regressed, ${thousands(improved)} improved, ${thousands(unchanged)} unchanged)`,
      target: 'stated',
    },
    {
      what: 'the next night: peak RSS of `probefleet coordinator` through its run, report and comparison',
      result: `${peakMb} MB`,
      target: `< ${TARGETS.peakRssMb} MB`,
      met: peakMb < TARGETS.peakRssMb,
    },
    {
      what: `the next night: the coordinator's slowest answer to \`GET /metrics\` (one a second, ${scrapes} in all)`,
      result:
        `${(slowestScrapeMs / 1000).toFixed(2)} s, ${failedScrapes.length} failed` +
        (failedScrapes.length > 0 ? ` (${[...new Set(failedScrapes)].join('; ')})` : ''),
      target: "< 10 s (Prometheus' default scrape timeout), none failed",
      met: slowestScrapeMs < 10_000 && failedScrapes.length === 0,
    },
  ];
}

const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-big-run-'));
const redis = await startBenchRedis();
const client = new Redis(redisOptions({ url: redis.url }));
const nginx = await startNginx([{ files: { 'index.html': 'probefleet bench.\n\n' }, directives: ['access_log off;'] }]);
const services: ChildProcess[] = [];
const rows: { what: string; result: string; target: string; met?: boolean }[] = [];
const usedMemory = async () => (await redisMemory(client)).usedBytes;
try {
  const plan = path.join(dir, 'plan.yaml');
  const planYaml = queuePlanYaml('big-run', shape, `${nginx.urls[0]}/`);
  if (targetCount <= shape.targets) await writeFile(plan, planYaml);
  else {
    // Each target a URL of its own (a query: nginx serves the same page), named from it.
    const more = Array.from({ length: targetCount - shape.targets }, (_, i) => `${nginx.urls[0]}/?t=${i}`);
    await writeFile(path.join(dir, 'sd.json'), JSON.stringify([{ targets: more }]));
    await writeFile(plan, planYaml.replace('\ntargets:\n', '\ntargetFiles: [{ files: [sd.json] }]\ntargets:\n'));
  }
  const common = ['--redis', redis.url, '--max-jobs', String(jobs)];
  const memoryBefore = await usedMemory();

  const submitCommand = `probefleet run PLAN --redis URL --max-jobs ${jobs} --detach --run-id big`;
  say(`${submitCommand} (${jobs} jobs, ${shape.regions} regions)`);
  const submit = await cli(['run', plan, ...common, '--detach', '--run-id', 'big'], path.join(dir, 'submit.time')).done;
  if (submit.code !== 0) throw new Error(`run --detach exited ${submit.code}: ${submit.stderr}`);
  const rate = jobs / submit.seconds;
  rows.push({
    what: `submit, process start to exit: \`${submitCommand}\``,
    result: `${thousands(Math.round(rate))} jobs/s (${submit.seconds.toFixed(2)} s, peak RSS ${submit.peakRssMb} MB)`,
    target: `≥ ${thousands(TARGETS.submitJobsPerSecond)} jobs/s`,
    met: rate >= TARGETS.submitJobsPerSecond,
  });

  if (!values['submit-only']) {
    const coordinatorPort = await freeLoopbackPort();
    const started = [
      cli(['coordinator', ...common, '--port', String(coordinatorPort)]),
      ...regions.map((region) => cli(['worker', '--region', region, '--redis', redis.url, '--allow-loopback'])),
    ];
    services.push(...started.map((service) => service.child));
    say(`a coordinator and ${regions.length} workers started; waiting for the run`);
    // A service that ends before the run does ends the benchmark, with what it said.
    const serviceEnded = Promise.race(started.map((service) => service.done)).then((ended) => {
      throw new Error(`a service exited (${ended.code}) during the run: ${ended.stderr}`);
    });
    // The user's wait for the run: the same run id completes nothing and waits for it.
    const waitStarted = Date.now();
    const wait = cli(
      ['run', plan, ...common, '--run-id', 'big', '--json', path.join(dir, 'run.json')],
      path.join(dir, 'wait.time'),
    );
    const peaks = new Map<string, number>();
    const sample = () => {
      for (const [i, child] of services.entries()) {
        const name = i === 0 ? 'coordinator' : `worker ${regions[i - 1]}`;
        try {
          peaks.set(name, Math.max(peaks.get(name) ?? 0, Math.round(processMemoryKb(child.pid!).hwm / 1024)));
        } catch {
          // exited: its last sample stands
        }
      }
    };
    const sampler = setInterval(sample, 1000);
    const waited = await Promise.race([wait.done, serviceEnded]);
    sample();
    clearInterval(sampler);
    if (waited.code !== 0) throw new Error(`run exited ${waited.code}: ${waited.stderr}`);
    const report = await scanRunJson(path.join(dir, 'run.json'));
    const lastJob = report.lastFinishedAt;
    say(
      `${report.results} results, ${report.unfinished} unfinished, in ${((waited.endedAt - waitStarted) / 1000).toFixed(1)} s`,
    );
    const reportSeconds = (waited.endedAt - lastJob) / 1000;
    rows.push({
      what: `peak RSS of the \`probefleet run PLAN --redis URL --run-id big --json FILE\` that waits and writes the report`,
      result: `${waited.peakRssMb} MB`,
      target: `< ${TARGETS.peakRssMb} MB`,
      met: (waited.peakRssMb ?? Infinity) < TARGETS.peakRssMb,
    });
    const coordinatorPeak = peaks.get('coordinator') ?? 0;
    rows.push({
      what: 'peak RSS of `probefleet coordinator`',
      result: `${coordinatorPeak} MB`,
      target: `< ${TARGETS.peakRssMb} MB`,
      met: coordinatorPeak < TARGETS.peakRssMb,
    });
    const workerPeaks = [...peaks].filter(([name]) => name.startsWith('worker')).map(([, mb]) => mb);
    rows.push({
      what: `peak RSS of each \`probefleet worker\` (${workerPeaks.length})`,
      result: `${Math.min(...workerPeaks)}–${Math.max(...workerPeaks)} MB`,
      target: `< ${TARGETS.peakRssMb} MB`,
      met: Math.max(...workerPeaks) < TARGETS.peakRssMb,
    });
    rows.push({
      what: 'report ready after the last job finished (the `run` above has written it and exited)',
      result: `${reportSeconds.toFixed(1)} s`,
      target: `< ${TARGETS.reportSeconds} s`,
      met: reportSeconds < TARGETS.reportSeconds,
    });
    const reread = await cli(['report', path.join(dir, 'run.json')], path.join(dir, 'report.time')).done;
    if (reread.code !== 0) throw new Error(`report exited ${reread.code}: ${reread.stderr}`);
    rows.push({
      what: '`probefleet report FILE` of the run JSON written above (its summary; the file read in parts)',
      result: `${reread.seconds.toFixed(1)} s, peak RSS ${reread.peakRssMb} MB`,
      target: `< ${TARGETS.peakRssMb} MB`,
      met: (reread.peakRssMb ?? Infinity) < TARGETS.peakRssMb,
    });
    // Let the coordinator's own finishing of the run settle before Redis is weighed.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const perJob = ((await usedMemory()) - memoryBefore) / jobs;
    rows.push({
      what: "Redis memory per finished job (INFO used_memory after the run, less before; the report stored, the run's other keys gone)",
      result: `${thousands(Math.round(perJob))} bytes`,
      target: "stated; bounded by the reports' retention (`--report-retention-days`, `--report-retention-count`)",
    });
    if (values['next-night']) {
      const coordinator = services[0]!;
      rows.push(
        ...(await Promise.race([
          nextNight(plan, common, coordinator.pid!, `http://127.0.0.1:${coordinatorPort}/metrics`),
          serviceEnded,
        ])),
      );
    }
  }
} finally {
  for (const child of services) child.kill('SIGTERM');
  await Promise.all(
    services.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : null)),
  );
  client.disconnect();
  await nginx.stop();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
}

const mark = (met?: boolean) => (met === undefined ? '' : met ? ': met' : ': MISSED');
process.stdout.write(
  [
    `| ${thousands(jobs)} jobs (\`node dist/bench/big-run.js --jobs ${jobs}\`) | result | target |`,
    '|---|---|---|',
    ...rows.map((row) => `| ${row.what} | ${row.result} | ${row.target}${mark(row.met)} |`),
    '',
  ].join('\n'),
);
if (rows.some((row) => row.met === false)) process.exitCode = 1;
