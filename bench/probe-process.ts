// A benchmark child process: runs one job with the worker's own code (executeJob), as a worker
// would, RUNS times in a row (argv[3], default 1: the first run is a fresh process's, the later
// ones a warm worker's), and prints the results as a JSON array on stdout. Before the first, it
// warms up the request path as `probefleet worker` and `probefleet run` do (worker/warm-up.ts). Its CPU time and peak
// RSS are the worker's. With PROBEFLEET_BENCH_PROFILE=FILE it writes a V8 CPU profile of the
// last run alone (what `node --cpu-prof` records, without the process's start-up in it).
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import type { ProbeResult } from '../contracts/result.js';
import { createLogger } from '../common/log.js';
import { executeJob } from '../worker/execute-job.js';
import { warmUpRequestPath } from '../worker/warm-up.js';

const job: unknown = JSON.parse(process.argv[2]);
const runs = Number(process.argv[3] ?? 1);
const log = createLogger('bench-probe', 'warn');
const profileFile = process.env.PROBEFLEET_BENCH_PROFILE;

await warmUpRequestPath('local', log);
const results: ProbeResult[] = [];
for (let i = 1; i < runs; i++) results.push(await executeJob(job, { region: 'local', log }));
if (profileFile) {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  results.push(await executeJob(job, { region: 'local', log }));
  const { profile } = await session.post('Profiler.stop');
  await writeFile(profileFile, JSON.stringify(profile));
  session.disconnect();
} else {
  results.push(await executeJob(job, { region: 'local', log }));
}
process.stdout.write(JSON.stringify(results));
