// Measurements at a real-time priority, as the emulated regions run their measured processes
// (regions/harness.ts): on this shared 2-vCPU machine a burst of other work between two runs
// moves loopback tails by several milliseconds, which a comparison rightly calls a change. With
// SCHED_RR the runs measure the lab, not the neighbours: every ordinary process (the rest of the
// suite, `stress-ng --cpu 2`) waits while they run. Without CAP_SYS_NICE they run as they are.
// A file that measures this way takes the 'realtime' lock (exclusive.ts), so two never compete.
import { execFile } from 'node:child_process';

function chrt(args: string[]): Promise<boolean> {
  return new Promise((resolve) => execFile('chrt', args, (err) => resolve(!err)));
}

/** Every thread of each process at SCHED_RR 5 (threads they start later inherit it); whether all could be. */
async function toRealtime(pids: number[]): Promise<boolean> {
  const done = await Promise.all(pids.map((pid) => chrt(['-a', '--rr', '-p', '5', String(pid)])));
  return done.every(Boolean);
}

/**
 * Runs `fn` with every thread of this process at SCHED_RR 5, then back to normal; `realtime` says
 * whether it could. `servers`: processes that answer the measured requests (a Python or nginx
 * server of the test's own), put at the same priority for good, so that load cannot delay them either.
 */
export async function atRealtimePriority<T>(
  fn: () => Promise<T>,
  servers: number[] = [],
): Promise<{ value: T; realtime: boolean }> {
  const [self, others] = await Promise.all([toRealtime([process.pid]), toRealtime(servers)]);
  try {
    return { value: await fn(), realtime: self && others };
  } finally {
    if (self) await chrt(['-a', '--other', '-p', '0', String(process.pid)]);
  }
}
