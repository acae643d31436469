// How long this thread has been ready to run but waiting for a CPU (Linux's schedstat
// run_delay): what a busy machine adds to every time the thread measures. A job records the
// wait over its run, so a comparison can tell a slower target from a starved worker.
import { openSync, readSync } from 'node:fs';

const SCHEDSTAT = '/proc/thread-self/schedstat';
let fd: number | null | undefined;
const buffer = Buffer.alloc(96);

/** Nanoseconds this thread has waited for a CPU since it started; null where the kernel does not say (not Linux, no schedstats). */
export function cpuWaitNs(): number | null {
  if (fd === undefined) {
    try {
      fd = openSync(SCHEDSTAT, 'r');
    } catch {
      fd = null;
    }
  }
  if (fd === null) return null;
  try {
    const n = readSync(fd, buffer, 0, buffer.length, 0);
    const wait = Number(buffer.toString('latin1', 0, n).split(' ')[1]);
    return Number.isFinite(wait) ? wait : null;
  } catch {
    return null;
  }
}
