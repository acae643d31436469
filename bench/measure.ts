// Runs one benchmark process under /usr/bin/time and reports what it cost: wall time, CPU time,
// peak RSS, and the CPU time the lab server spent meanwhile (from /proc), so a result can say
// whether the tool or the server was the bottleneck.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
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

export async function measure(
  command: string,
  args: string[],
  options: { serverPid: number; timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<Measured> {
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-bench-'));
  const timeFile = path.join(dir, 'time.txt');
  const loadAverage = loadavg()[0];
  const serverBefore = processCpuSeconds(options.serverPid);
  try {
    const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number | null }>(
      (resolve, reject) => {
        const child = spawn('/usr/bin/time', ['-f', '%e %U %S %M', '-o', timeFile, command, ...args], {
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
