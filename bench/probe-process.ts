// A benchmark child process: runs one job with the worker's own code (executeJob), as a worker
// would, and prints the result as JSON on stdout. Its CPU time and peak RSS are the worker's.
// With PROBEFLEET_BENCH_PROFILE=FILE it writes a V8 CPU profile of the job alone (the same
// profile `node --cpu-prof` writes, without the process's start-up in it).
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { createLogger } from '../common/log.js';
import { executeJob } from '../worker/execute-job.js';

const job: unknown = JSON.parse(process.argv[2]);
const log = createLogger('bench-probe', 'warn');
const profileFile = process.env.PROBEFLEET_BENCH_PROFILE;

let result;
if (profileFile) {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  result = await executeJob(job, { region: 'local', log });
  const { profile } = await session.post('Profiler.stop');
  await writeFile(profileFile, JSON.stringify(profile));
  session.disconnect();
} else {
  result = await executeJob(job, { region: 'local', log });
}
process.stdout.write(JSON.stringify(result));
