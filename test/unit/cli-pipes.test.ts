// `probefleet plan expand plan.yaml | head`: the reader goes away while the command writes.
// The command ends quietly with 141 (as a program killed by SIGPIPE does), not with an
// unhandled EPIPE and a stack trace. The handler is the CLI's own, for every command.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { before, describe, test } from 'node:test';
import { CLI, REPO_ROOT } from '../helpers/repo.js';
import { writePlan } from '../helpers/plans.js';

/** Runs the CLI with stdout read until the first chunk, then closed, as `| head -1` does. */
function runClosingStdout(args: string[]): Promise<{ code: number | null; stderr: string; firstChunk: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    let stderr = '';
    let firstChunk = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout.once('data', (chunk) => {
      firstChunk = String(chunk);
      child.stdout.destroy();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, firstChunk });
    });
  });
}

describe('a reader of stdout that goes away', () => {
  let plan: string;
  before(async () => {
    // 20 regions x 100 targets x 3 drain modes (one client) = 6,000 jobs: megabytes of output, far more than a pipe holds.
    const regions = Array.from({ length: 20 }, (_, i) => `r${i}`).join(', ');
    const targets = Array.from({ length: 100 }, (_, i) => `  - { name: t${i}, url: "http://127.0.0.1:9/" }`);
    plan = await writePlan(
      [
        'name: many',
        `regions: [${regions}]`,
        'targets:',
        ...targets,
        'experiments: [{ probe: drain, clients: [undici] }]',
        '',
      ].join('\n'),
    );
  });

  for (const args of [
    ['plan', 'expand'],
    ['plan', 'expand', '--json'],
  ]) {
    test(`${args.join(' ')} ... | head: exit 141, nothing on stderr`, async () => {
      const { code, stderr, firstChunk } = await runClosingStdout([...args, plan]);
      assert.ok(firstChunk.length > 0, 'it wrote before the reader went away');
      assert.equal(stderr, '');
      assert.equal(code, 141);
    });
  }
});
