// Runs one benchmark process under /usr/bin/time and reports what it cost: wall time, CPU time,
// peak RSS, and the CPU time the lab server spent meanwhile (from /proc), so a result can say
// whether the tool or the server was the bottleneck.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';

export interface Measured {
  stdout: string;
  wallSeconds: number;
  /** User + system CPU time of the process. */
  cpuSeconds: number;
  maxRssKb: number;
  /** CPU time of the lab server process over the same interval. */
  serverCpuSeconds: number;
  /** One-minute load average just before the run (other sessions share this machine). */
  loadAverage: number;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** utime + stime of a process, in seconds (fields 14 and 15 of /proc/PID/stat). */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** A live process's resident memory now and at its peak (VmRSS, VmHWM), in kB. */
export function processMemoryKb(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** A process and its descendants, from /proc (nginx's master and its workers, say). */
function processTree(pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
  return [pid, ...children.flatMap(processTree)];
}

/**
 * Runs `pid`, its threads and its descendants on the CPUs in `cpus` (taskset's list: "0", "0-1").
 * The sequential benchmark puts each target and each client on one CPU: on this VM a round trip
 * between processes on two vCPUs waits for the other vCPU to wake (~75 µs against ~17 µs on one,
 * as the scheduler happened to place them; a bare undici loop measured both in consecutive runs
 * of one process), which would be measured as the client's cost.
 */
export function pinProcesses(pid: number, cpus: string): void {
  for (const each of processTree(pid))
    execFileSync('taskset', ['-a', '-p', '-c', cpus, String(each)], { stdio: 'ignore' });
}

/** Every CPU of the machine, as taskset lists them. */
export const ALL_CPUS = `0-${availableParallelism() - 1}`;

export async function measure(
  command: string,
  args: string[],
  options: {
    serverPid: number;
    timeoutMs: number;
    env?: NodeJS.ProcessEnv;
    /** Run the process on this CPU only (see pinProcesses). */
    cpu?: number;
  },
): Promise<Measured> {
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-bench-'));
  const timeFile = path.join(dir, 'time.txt');
  const loadAverage = loadavg()[0];
  const serverBefore = processCpuSeconds(options.serverPid);
  try {
    const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number | null }>(
      (resolve, reject) => {
        const pinned =
          options.cpu === undefined ? [command, ...args] : ['taskset', '-c', String(options.cpu), command, ...args];
        const child = spawn('/usr/bin/time', ['-f', '%e %U %S %M', '-o', timeFile, ...pinned], {
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: options.timeoutMs,
          env: { ...process.env, ...options.env },
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (err = (err + chunk.toString()).slice(-4000)));
        child.once('error', reject);
        child.once('close', (exitCode) => resolve({ stdout: out, stderr: err, code: exitCode }));
      },
    );
    const serverCpuSeconds = processCpuSeconds(options.serverPid) - serverBefore;
    if (code !== 0)
      throw new Error(`${command} ${args.join(' ').slice(0, 200)} exited with ${code}: ${stderr.trim().slice(-1000)}`);
    const [wall, user, system, rss] = (await readFile(timeFile, 'utf8'))
      .trim()
      .split('\n')
      .pop()!
      .split(' ')
      .map(Number);
    return { stdout, wallSeconds: wall, cpuSeconds: user + system, maxRssKb: rss, serverCpuSeconds, loadAverage };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
