import { setTimeout as sleep } from 'node:timers/promises';

/** True if the promise settles within `ms` (either way), false otherwise. The timer does not
 * outlive the answer, so it never holds a process open. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      sleep(ms, false, { signal: timer.signal }).catch(() => false),
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
