// Embedded mode: the run's jobs executed in this process by the worker's own code, as region
// `local`. Jobs run one at a time so that one measurement never competes with another; the shards
// of a job spread over several workers (the load probe's `workers`) are one measurement, and run
// at once.
import type { JobPayload } from '../contracts/job.js';
import type { ProbeResult } from '../contracts/result.js';
import type { Logger } from '../common/log.js';
import { executeJob } from '../worker/execute-job.js';
import type { TargetPolicy } from '../worker/target-policy.js';
import { warmUpRequestPath } from '../worker/warm-up.js';
import type { Progress } from './progress.js';

export const EMBEDDED_REGION = 'local';

/** `region`: the region the jobs are for (an emulated region runs its own jobs); default `local`.
 * `onResult`: told about each result as its job finishes (metrics).
 * `targetPolicy`: where probes may connect; default: loopback allowed, private ranges refused. */
export async function runEmbedded(
  jobs: JobPayload[],
  options: {
    log: Logger;
    progress: Progress;
    signal?: AbortSignal;
    region?: string;
    onResult?: (result: ProbeResult) => void;
    targetPolicy?: TargetPolicy;
  },
): Promise<ProbeResult[]> {
  const results: ProbeResult[] = [];
  const region = options.region ?? EMBEDDED_REGION;
  // Sequential requests time our own code too until the JIT has compiled it: warm it up first.
  if (jobs.some((job) => job.probe === 'reuse' && job.variant.mode !== 'cold'))
    await warmUpRequestPath(region, options.log);
  options.progress.start(jobs.length);
  const execute = (job: JobPayload) =>
    executeJob(job, {
      region,
      log: options.log,
      signal: options.signal,
      targetPolicy: options.targetPolicy,
      // The plan is the user's own, run on their machine: its client commands may run, and its
      // secret files be read wherever they are.
      allowClientCommands: true,
      secretFileDirs: 'any',
    });
  for (const together of jobGroups(jobs)) {
    if (options.signal?.aborted) break;
    // The shards of a job spread over several workers start at once here: this process is their
    // one worker, so the merged figures are what one machine could send.
    const done = await Promise.all(together.map(execute));
    for (const [i, result] of done.entries()) {
      const job = together[i]!;
      results.push(result);
      options.onResult?.(result);
      options.progress.step(`${job.probe} ${Object.values(job.variant).join(' ')} ${job.target.name}`);
    }
  }
  options.progress.done();
  return results;
}

/** The jobs to run one after another, each alone but for a job's shards (consecutive, from splitPlan), which run together. */
function jobGroups(jobs: JobPayload[]): JobPayload[][] {
  const groups: JobPayload[][] = [];
  for (const job of jobs) {
    const last = groups.at(-1);
    if (job.shard && last?.[0]?.shard?.partOf === job.shard.partOf) last.push(job);
    else groups.push([job]);
  }
  return groups;
}
