// Measurements at a real-time priority, as the emulated regions run their measured processes
// (regions/harness.ts): on this shared 2-vCPU machine a burst of other work between two runs
// moves loopback tails by several milliseconds, which a comparison rightly calls a change. With
// SCHED_RR the runs measure the lab, not the neighbours. Without CAP_SYS_NICE they run as they are.
import { execFile } from 'node:child_process';

function chrt(args: string[]): Promise<boolean> {
  return new Promise((resolve) => execFile('chrt', args, (err) => resolve(!err)));
}

/** Runs `fn` with every thread of this process at SCHED_RR 5, then back to normal; `realtime` says whether it could. */
export async function atRealtimePriority<T>(fn: () => Promise<T>): Promise<{ value: T; realtime: boolean }> {
  const pid = String(process.pid);
  const realtime = await chrt(['-a', '--rr', '-p', '5', pid]);
  try {
    return { value: await fn(), realtime };
  } finally {
    if (realtime) await chrt(['-a', '--other', '-p', '0', pid]);
  }
}
