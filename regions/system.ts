// Running the system commands the emulated regions are made of (ip, tc, iptables, gcc):
// a failure names the command and carries its stderr.
import { execFile, execFileSync } from 'node:child_process';

export class CommandError extends Error {
  override name = 'CommandError';
  constructor(
    readonly command: string[],
    readonly stderr: string,
    readonly exitCode: number | null,
  ) {
    super(
      `\`${command.join(' ')}\` failed${exitCode === null ? '' : ` (exit ${exitCode})`}: ${stderr.trim() || 'no message'}`,
    );
  }
}

/** Runs a command and resolves with its stdout; rejects with a CommandError. */
export function run(command: string, args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: options.timeoutMs ?? 30_000, maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      const code = typeof err.code === 'number' ? err.code : null;
      reject(new CommandError([command, ...args], stderr || err.message, code));
    });
  });
}

/** The synchronous twin of run(), for cleanup in `exit` and signal handlers where nothing async runs. */
export function runSync(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000, encoding: 'utf8' });
  } catch (err) {
    const e = err as { stderr?: string; status?: number | null; message: string };
    throw new CommandError([command, ...args], e.stderr || e.message, e.status ?? null);
  }
}

/** Whether an executable is on PATH. */
export function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v "$1"`, 'sh', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Blocks the thread for a while (cleanup in `exit` handlers cannot await). */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Put in front of a command line, it makes the kernel kill (SIGKILL) that process when this one
 * dies, however it dies, even by SIGKILL: util-linux `setpriv --pdeathsig`. The parent-death
 * signal survives exec, so it also holds behind `ip netns exec` and `chrt`. */
export const TIED_TO_THIS_PROCESS = ['setpriv', '--pdeathsig', 'KILL', '--'];

/** `command args` tied to this process, as spawn() takes it. */
export function tiedToThisProcess(command: string, args: string[]): [string, string[]] {
  const [launcher, ...launcherArgs] = TIED_TO_THIS_PROCESS;
  return [launcher, [...launcherArgs, command, ...args]];
}
