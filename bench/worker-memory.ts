// A `probefleet worker`'s memory over a long run: one worker takes N one-request `reuse` jobs
// (the queue benchmark's plan: 100 targets × 50 experiments × 2 modes per 10,000) against
// Debian's nginx, submitted by `probefleet run --redis` to a redis-server of this script's own,
// while its RSS is sampled every second with the number of jobs it has finished by then, so a
// leak shows as RSS growing with the job count. Not part of `npm run bench` (the queue benchmark
// records the peak); run it when the worker's memory is in question:
//   npm run build && node dist/bench/worker-memory.js [--jobs 10000]
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startNginx } from '../common/nginx-server.js';
import { TIED_TO_THIS_PROCESS } from '../regions/system.js';
import { processMemoryKb } from './measure.js';
import { END_TO_END_SHAPE, queuePlanYaml, startBenchRedis } from './queue.js';

const CLI = fileURLToPath(new URL('../../bin/probefleet.js', import.meta.url));
const REGION = 'r0';

const { values } = parseArgs({ options: { jobs: { type: 'string', default: '10000' } } });
const batches = Math.round(Number(values.jobs) / 10_000);
if (!(batches >= 1 && batches <= 10)) throw new Error(`--jobs: a multiple of 10000 up to 100000, got ${values.jobs}`);

const finishedIn = (logFile: string) => readFileSync(logFile, 'utf8').split('"probe finished"').length - 1;

const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-worker-memory-'));
const redis = await startBenchRedis();
const nginx = await startNginx([{ files: { 'index.html': 'probefleet bench.\n\n' }, directives: ['access_log off;'] }]);
const logFile = path.join(dir, 'worker.log');
const fd = openSync(logFile, 'w');
const [launcher, ...launcherArgs] = TIED_TO_THIS_PROCESS;
const worker = spawn(
  launcher,
  // At debug, the worker logs every job's 'probe finished': what the sampler counts.
  [
    ...launcherArgs,
    process.execPath,
    CLI,
    'worker',
    '--region',
    REGION,
    '--redis',
    redis.url,
    '--allow-loopback',
    '--log-level',
    'debug',
  ],
  { stdio: ['ignore', fd, fd] },
);
closeSync(fd);
const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
const samples: { seconds: number; jobs: number; rssMb: number }[] = [];
const started = Date.now();
const sampler = setInterval(() => {
  const { rss } = processMemoryKb(worker.pid!);
  samples.push({ seconds: (Date.now() - started) / 1000, jobs: finishedIn(logFile), rssMb: Math.round(rss / 1024) });
  process.stderr.write(`worker-memory: ${samples.at(-1)!.jobs} jobs, RSS ${samples.at(-1)!.rssMb} MB\n`);
}, 1000);
try {
  for (let batch = 0; batch < batches; batch++) {
    const plan = path.join(dir, `plan-${batch}.yaml`);
    await writeFile(plan, queuePlanYaml(`memory-${batch}`, END_TO_END_SHAPE, `${nginx.urls[0]}/`));
    await new Promise<void>((resolve, reject) => {
      const run = spawn(process.execPath, [CLI, 'run', plan, '--redis', redis.url, '--csv', '/dev/null'], {
        stdio: ['ignore', 'ignore', 'inherit'],
        timeout: 600_000,
      });
      run.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`probefleet run exited ${code}`))));
    });
  }
} finally {
  clearInterval(sampler);
  const { hwm } = processMemoryKb(worker.pid!);
  worker.kill('SIGTERM');
  await exited;
  await nginx.stop();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
  // RSS at each tenth of the jobs: flat once warm means no per-job state is kept.
  const jobs = samples.at(-1)?.jobs ?? 0;
  const marks = Array.from({ length: 10 }, (_, i) => samples.find((s) => s.jobs >= ((i + 1) * jobs) / 10)).filter(
    (s) => s !== undefined,
  );
  process.stdout.write(
    `${JSON.stringify({ jobs, peakRssMb: Math.round(hwm / 1024), rssMbAt: marks.map((s) => [s.jobs, s.rssMb]) })}\n`,
  );
}
