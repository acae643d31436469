// The real CLI as a separate OS process (workers, coordinators), with its stderr collected so a
// test can wait for a log line, and stopped by its own pid.
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI, REPO_ROOT } from './repo.js';

export interface CliProcess {
  child: ChildProcess;
  pid: number;
  /** Everything it wrote to stderr so far (its JSON logs). */
  stderr(): string;
  /** Resolves when stderr matches, rejects after `timeoutMs` or if the process exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code when the process ends by itself (null if killed by a signal). */
  exited: Promise<number | null>;
  /** Sends the signal and resolves with the exit code (null if killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `wrapper`: a command the CLI runs under, as a container's entry point does (e.g. tini --). */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}, wrapper: string[] = []): CliProcess {
  const [command, ...rest] = [...wrapper, process.execPath, CLI, ...args];
  const child = spawn(command!, rest, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    pid: child.pid!,
    stderr: () => err,
    exited,
    async waitFor(pattern, timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      while (!pattern.test(err)) {
        if (child.exitCode !== null) throw new Error(`process exited (${child.exitCode}) before ${pattern}:\n${err}`);
        if (Date.now() > until) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${err}`);
        await sleep(50);
      }
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** A worker process for a region, on the given Redis and prefix, allowed to reach the lab on
 * loopback (add `--no-allow-loopback` to `extra` to refuse it); resolves once it takes jobs. */
export async function startWorkerProcess(
  region: string,
  redisUrl: string,
  prefix: string,
  extra: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<CliProcess> {
  const worker = spawnCli(
    ['worker', '--region', region, '--redis', redisUrl, '--prefix', prefix, '--allow-loopback', ...extra],
    env,
  );
  try {
    await worker.waitFor(/"msg":"worker ready"/);
  } catch (err) {
    // Not handed to the test, so no after() stops it: a worker left retrying would keep the test
    // file's process alive for good.
    await worker.stop('SIGKILL');
    throw err;
  }
  return worker;
}
