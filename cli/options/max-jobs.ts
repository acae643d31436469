// --max-jobs: the most jobs one run of a plan may make (regions x targets x variants), for every
// command that loads a plan or fires one; PROBEFLEET_MAX_JOBS is its environment form. Counted
// before any job is made (coordinator/split.ts countJobs), so a plan far over it costs nothing.
import type { Argv } from 'yargs';
import { PLAN_LIMITS } from '../../contracts/limits.js';
import { BadArgumentError } from '../../common/bad-input.js';
import { thousands } from '../../common/plural.js';

export const maxJobsArgs = <T>(y: Argv<T>) =>
  y.option('max-jobs', {
    type: 'number',
    describe: `the most jobs one run of a plan may make, regions x targets x variants (default: $PROBEFLEET_MAX_JOBS, else ${thousands(PLAN_LIMITS.jobsPerRun)}; ${thousands(PLAN_LIMITS.embeddedJobsPerRun)} for a run in one process)`,
  });

/** The limit from the flag, else the environment, else `fallback`. */
export function maxJobsOf(args: { maxJobs?: number }, fallback: number = PLAN_LIMITS.jobsPerRun): number {
  const env = process.env.PROBEFLEET_MAX_JOBS;
  if (args.maxJobs === undefined && !env) return fallback;
  const [value, given, from] =
    args.maxJobs !== undefined
      ? [args.maxJobs, String(args.maxJobs), '--max-jobs']
      : [Number(env), env, 'PROBEFLEET_MAX_JOBS'];
  if (!Number.isSafeInteger(value) || value < 1)
    throw new BadArgumentError(`${from} must be a whole number of jobs, at least 1 (got "${given}")`);
  return value;
}
