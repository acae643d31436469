// The CLI's exit codes, in one place for the entry point and the commands that set their own.

/** Something failed: a run, a connection, a bug. */
export const EXIT_FAILED = 1;
/** What was given is wrong: a plan, a file, an option. */
export const EXIT_BAD_INPUT = 2;
/** `compare --fail-on`: the comparison found what it was told to fail on (a regression). */
export const EXIT_REGRESSED = 3;
/** Redis did not answer within --redis-timeout (or was lost until the run's wait ended). */
export const EXIT_REDIS_UNREACHABLE = 4;
/** The reader of stdout went away (`probefleet plan expand PLAN | head`): 128 + SIGPIPE, as for a program the signal killed. */
export const EXIT_BROKEN_PIPE = 128 + 13;
