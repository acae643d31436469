// Retention of jobs and reports in Redis (contracts/retention.ts): the same flags and environment
// variables for every command that applies a part of it (coordinator, worker, run), so a fleet
// configured once through the environment agrees with itself.
import type { Argv } from 'yargs';
import { DEFAULT_RETENTION, type Keep, type RetentionSettings } from '../../contracts/retention.js';
import { BadArgumentError } from '../../common/bad-input.js';

// The variables are read by their full names (not built from a prefix): the deploy tests find
// every variable the code reads by its name and hold the compose and Kubernetes files to them.
const KINDS = {
  jobs: {
    flag: 'job-retention',
    env: 'PROBEFLEET_JOB_RETENTION',
    read: () => [process.env.PROBEFLEET_JOB_RETENTION_DAYS, process.env.PROBEFLEET_JOB_RETENTION_COUNT],
    what: 'failed jobs and fired schedules',
  },
  reports: {
    flag: 'report-retention',
    env: 'PROBEFLEET_REPORT_RETENTION',
    read: () => [process.env.PROBEFLEET_REPORT_RETENTION_DAYS, process.env.PROBEFLEET_REPORT_RETENTION_COUNT],
    what: 'stored run reports',
  },
} as const;
type Kind = keyof typeof KINDS;

/** --job-retention-days/-count and --report-retention-days/-count, for the kinds given. */
export function retentionArgs<T>(y: Argv<T>, kinds: readonly Kind[]): Argv<T> {
  let out = y;
  for (const kind of kinds) {
    const { flag, env, what } = KINDS[kind];
    const defaults = DEFAULT_RETENTION[kind];
    out = out
      .option(`${flag}-days`, {
        type: 'number',
        describe: `how long ${what} are kept in Redis (default: $${env}_DAYS, else ${defaults.maxAgeSeconds / 86_400})`,
      })
      .option(`${flag}-count`, {
        type: 'number',
        describe: `how many ${what} are kept at most${kind === 'jobs' ? ' per queue' : ''}, the oldest removed first (default: $${env}_COUNT, else ${defaults.maxCount})`,
      });
  }
  return out;
}

function number(given: unknown, fromEnv: string | undefined): number | undefined {
  if (typeof given === 'number') return given;
  return fromEnv ? Number(fromEnv) : undefined;
}

function keepOf(args: Record<string, unknown>, kind: Kind): Keep {
  const { flag, env, read } = KINDS[kind];
  const camel = (suffix: string) => `${flag}-${suffix}`.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  const [daysEnv, countEnv] = read();
  const days = number(args[camel('days')], daysEnv);
  const count = number(args[camel('count')], countEnv);
  if (days !== undefined && !(days > 0))
    throw new BadArgumentError(`--${flag}-days (or ${env}_DAYS) must be positive (got ${days})`);
  // A report is read back right after it is stored (by `run`, `runs show`): keep at least one.
  const least = kind === 'reports' ? 1 : 0;
  if (count !== undefined && !(Number.isInteger(count) && count >= least))
    throw new BadArgumentError(
      `--${flag}-count (or ${env}_COUNT) must be a whole number, ${least} or more (got ${count})`,
    );
  return {
    maxAgeSeconds: days !== undefined ? Math.round(days * 86_400) : DEFAULT_RETENTION[kind].maxAgeSeconds,
    maxCount: count ?? DEFAULT_RETENTION[kind].maxCount,
  };
}

/** The settings from the flags, else the environment, else the defaults. */
export function retentionOf(args: Record<string, unknown>): RetentionSettings {
  return { jobs: keepOf(args, 'jobs'), reports: keepOf(args, 'reports') };
}
