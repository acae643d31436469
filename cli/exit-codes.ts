// The CLI's exit codes, in one place for the entry point, the commands that set their own, and
// the list `--help` prints (the README's is the same list).

/** Something failed: a job of a run (any job without a clean result), a connection, a bug. */
export const EXIT_FAILED = 1;
/** What was given is wrong: a plan, a file, an option. */
export const EXIT_BAD_INPUT = 2;
/** `compare --fail-on`: the comparison found what it was told to fail on (a regression). */
export const EXIT_REGRESSED = 3;
/** `run`: every job has a result, and a value breached one of the plan's thresholds. */
export const EXIT_THRESHOLD_BREACHED = 5;
/** Redis did not answer within --redis-timeout (or was lost until the run's wait ended), or it is
 * full (maxmemory reached under policy noeviction: writes refused). */
export const EXIT_REDIS_UNREACHABLE = 4;
/** Ctrl-C (SIGINT) stopped the command: 128 + SIGINT, as a shell reports it. */
export const EXIT_INTERRUPTED = 128 + 2;
/** The reader of stdout went away (`probefleet plan expand PLAN | head`): 128 + SIGPIPE, as for a program the signal killed. */
export const EXIT_BROKEN_PIPE = 128 + 13;

/** Once its command is done, the process ends within this whatever a library left pending (ioredis
 * keeps the commands it queued for a Redis that is away, each with its --redis-timeout timer, past a
 * disconnect), its stdout and stderr written out first. */
export const EXIT_LINGER_MS = 1_000;

export const EXIT_CODE_MEANINGS: [code: number, meaning: string][] = [
  [0, 'done; for run, every job has a result without an error'],
  [EXIT_FAILED, 'failed; for run, a job failed or has no result (stderr says how many and why)'],
  [EXIT_BAD_INPUT, 'bad input: a plan that fails validation (nothing runs), an unknown option, a bad file or run id'],
  [EXIT_REGRESSED, 'compare --fail-on found a regression'],
  [EXIT_REDIS_UNREACHABLE, 'Redis did not answer within --redis-timeout, or is full (maxmemory, noeviction)'],
  [EXIT_THRESHOLD_BREACHED, 'run: a value breached a threshold of the plan (1 wins when a job also failed)'],
  [EXIT_INTERRUPTED, 'Ctrl-C (SIGINT): stopped; a distributed run goes on in the fleet'],
  [EXIT_BROKEN_PIPE, 'the reader of stdout went away (probefleet plan expand PLAN | head)'],
];

/** The exit codes as `--help` ends with them. */
export const EXIT_CODES_HELP = `Exit codes:\n${EXIT_CODE_MEANINGS.map(([code, meaning]) => `  ${String(code).padStart(3)}  ${meaning}`).join('\n')}`;
