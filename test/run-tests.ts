// Runs the compiled test files with Node's test runner: several files at once (each in a process
// of its own; PROBEFLEET_TEST_CONCURRENCY, default 3), the spec reporter, then the ten slowest
// tests and files (slowest-reporter.ts). Files that must not run beside their own kind take a lock
// (helpers/exclusive.ts); they are spread through the order so that one waiting for its turn
// rarely keeps another file from starting. Everything the tests put in the temp directory goes to
// a folder of this run's, removed at the end; what the files left there is named, so a leak shows.
// Files are listed here because Node 20 and 22 read `node --test` arguments differently (paths vs globs).
//
//   node dist/test/run-tests.js [PATH-PART]   only files whose path contains PATH-PART
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const testRoot = fileURLToPath(new URL('.', import.meta.url));
const filter = process.argv[2];
const DEFAULT_CONCURRENCY = 3;

async function testFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) =>
      e.isDirectory() ? testFiles(path.join(dir, e.name)) : e.name.endsWith('.test.js') ? [path.join(dir, e.name)] : [],
    ),
  );
  return nested.flat().sort();
}

/** Whether a compiled test file takes a lock (helpers/exclusive.ts) before its tests. */
const takesLock = (file: string) => /\brunAlone\(/.test(readFileSync(file, 'utf8'));

/** The files in name order, with those that take a lock spread evenly among the others. */
function spread(files: string[]): string[] {
  const locking = files.filter(takesLock);
  const others = files.filter((f) => !locking.includes(f));
  const ordered: string[] = [];
  let next = 0;
  others.forEach((file, i) => {
    ordered.push(file);
    // Locking file k goes after others[(k + 1) * others / (locking + 1)].
    while (next < locking.length && i + 1 >= Math.floor(((next + 1) * others.length) / (locking.length + 1)))
      ordered.push(locking[next++]!);
  });
  return [...ordered, ...locking.slice(next)];
}

function concurrency(): number {
  const given = process.env.PROBEFLEET_TEST_CONCURRENCY;
  const n = given ? Number(given) : DEFAULT_CONCURRENCY;
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(
      `run-tests: PROBEFLEET_TEST_CONCURRENCY must be a whole number of at least 1, got "${given}"\n`,
    );
    process.exit(2);
  }
  return n;
}

const files = spread((await testFiles(testRoot)).filter((f) => !filter || f.includes(filter)));
const runDir = mkdtempSync(path.join(tmpdir(), 'probefleet-tests-'));
const runTmp = path.join(runDir, 'tmp');
const locks = path.join(runDir, 'locks');
mkdirSync(runTmp);

const reporters = [
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  `--test-reporter=${new URL('slowest-reporter.js', import.meta.url).href}`,
  '--test-reporter-destination=stdout',
];
const child = spawn(process.execPath, ['--test', `--test-concurrency=${concurrency()}`, ...reporters, ...files], {
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: runTmp, PROBEFLEET_TEST_LOCKS: locks },
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  let left: string[] = [];
  try {
    left = readdirSync(runTmp);
  } catch {
    // nothing was put there
  }
  if (left.length > 0)
    process.stdout.write(`\nWhat the tests left in the temp directory (removed now): ${left.join(', ')}\n`);
  rmSync(runDir, { recursive: true, force: true });
  process.exit(code ?? (signal ? 1 : 0));
});
