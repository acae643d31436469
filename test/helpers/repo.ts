import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Tests run from dist/test/...; the repository root is three levels up from here. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = fileURLToPath(new URL('../../../bin/probefleet.js', import.meta.url));

export interface CliOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `probefleet` binary from the repository root; `entry`, another script in its
 * place (test/unit/cli-bundle.test.ts runs tsc's modules directly). */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; entry?: string } = {},
): Promise<CliOutcome> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [options.entry ?? CLI, ...args],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, ...options.env },
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: 16 << 20,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
