import { setTimeout as sleep } from 'node:timers/promises';

/** The longest timer Node keeps (2^31 - 1 ms, ~24.8 days); it fires a longer one after 1 ms. */
export const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** True if the promise settles within `ms` (either way), false otherwise; `ms` beyond
 * LONGEST_TIMER_MS is that long (a run's deadline can be weeks away). The timer does not outlive
 * the answer, so it never holds a process open. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      sleep(Math.min(ms, LONGEST_TIMER_MS), false, { signal: timer.signal }).catch(() => false),
    ]);
  } finally {
    timer.abort();
  }
}

/**
 * Settles with `work`; or, when `work` has not settled `graceMs` after `signal` aborted, resolves
 * with `overrun()` instead. The grace timer keeps the process alive, so work waiting on a promise
 * nothing will settle still ends at its bound rather than with the process.
 */
export function settledByBound<T>(
  work: Promise<T>,
  signal: AbortSignal,
  graceMs: number,
  overrun: () => T,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let grace: NodeJS.Timeout | undefined;
    const onAbort = () => {
      grace = setTimeout(() => resolve(overrun()), graceMs);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => {
      clearTimeout(grace);
      signal.removeEventListener('abort', onAbort);
    });
  });
}

/** A turn-taker: each task given starts once every task given before it has settled (either way). */
export function oneAtATime(): <T>(task: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return (task) => {
    const run = last.then(task, task);
    last = run.catch(() => {});
    return run;
  };
}
