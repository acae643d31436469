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
