// A probe job run in a process of its own: how a worker contains a job that may kill the process
// running it. Used for the jobs of a batch whose last worker was lost while running it (killed,
// crashed, out of memory): one of them may be what killed it, and it must not take this worker
// down too. If the separate process dies, the job's result says that it killed its worker, and
// the batch goes on with its next job.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { JobPayload } from '../contracts/job.js';
import { probeResultSchema, type ProbeResult } from '../contracts/result.js';
import type { Logger } from '../common/log.js';
import { failedResult, TIME_BOUND_GRACE_MS } from './execute-job.js';
import type { TargetPolicySettings } from './target-policy.js';

const ENTRY = new URL('./isolated-job-entry.js', import.meta.url);
/** Past its job's bound and the probe's grace, the separate process gets this long to answer before it is killed. */
const EXIT_SLACK_MS = 5_000;

/** What the separate process reads on stdin. */
export interface IsolatedJobInput {
  job: JobPayload;
  region: string;
  policy: TargetPolicySettings;
  logLevel: string;
}

export interface IsolatedJobOptions {
  region: string;
  policy: TargetPolicySettings;
  log: Logger;
  /** The worker's shutdown: the separate process is stopped. */
  signal: AbortSignal;
}

/** Runs `job` in a new Node process and returns its result, or a KILLED_WORKER result when that process died without one. */
export function executeJobIsolated(job: JobPayload, options: IsolatedJobOptions): Promise<ProbeResult> {
  const startedAt = new Date();
  const child = spawn(process.execPath, [fileURLToPath(ENTRY)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const input: IsolatedJobInput = {
    job,
    region: options.region,
    policy: options.policy,
    logLevel: options.log.level,
  };
  child.stdin.on('error', () => {});
  child.stdin.end(JSON.stringify(input));
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  const onAbort = () => child.kill('SIGTERM');
  options.signal.addEventListener('abort', onAbort, { once: true });
  const limitMs = job.timeLimitMs + TIME_BOUND_GRACE_MS + EXIT_SLACK_MS;
  let overran = false;
  const timer = setTimeout(() => {
    overran = true;
    child.kill('SIGKILL');
  }, limitMs);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      const answer = Buffer.concat(chunks).toString('utf8');
      const parsed = code === 0 ? safeResult(answer) : undefined;
      // Measured by this worker, in a process of its own: the worker is what the report names.
      if (parsed) return resolve({ ...parsed, worker: { ...parsed.worker, pid: process.pid } });
      if (overran)
        return resolve(
          failedResult(job, options.region, startedAt, {
            code: 'DEADLINE_EXCEEDED',
            message: `its process of its own did not answer within ${limitMs} ms of starting (the job's bound and its grace): stopped`,
          }),
        );
      if (code === 0)
        return resolve(
          failedResult(job, options.region, startedAt, {
            code: 'INTERNAL_ERROR',
            message: 'its process of its own ended without a result this worker could read',
          }),
        );
      const how = signal ? `killed by ${signal}` : `exit code ${code}`;
      resolve(
        failedResult(job, options.region, startedAt, {
          code: 'KILLED_WORKER',
          message: `killed its worker: the worker running this batch was lost while running it; run again alone in a process of its own, the job ended that process too (${how} before it answered); not retried again`,
        }),
      );
    });
  });
}

function safeResult(text: string): ProbeResult | undefined {
  try {
    const parsed = probeResultSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
