// Runs every compiled test file with Node's test runner and its summary. Files are listed
// here because Node 20 and 22 read `node --test` arguments differently (paths vs globs).
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const testRoot = fileURLToPath(new URL('.', import.meta.url));
const filter = process.argv[2];

async function testFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) =>
      e.isDirectory() ? testFiles(path.join(dir, e.name)) : e.name.endsWith('.test.js') ? [path.join(dir, e.name)] : [],
    ),
  );
  return nested.flat().sort();
}

const files = (await testFiles(testRoot)).filter((f) => !filter || f.includes(filter));
const child = spawn(process.execPath, ['--test', '--test-reporter=spec', ...files], { stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
