// The CLI's bundle (cli/build-bundle.ts, docs/decisions/034-cli-bundle-and-code-cache.md): what
// `npm run build` made is what bin/probefleet.js runs, V8 takes its code cache, and it answers as
// the modules it was built from do, output and exit status alike.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import bundleScript from '../../cli/bundle-script.cjs';
import { CLI, REPO_ROOT, runCli, type CliOutcome } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const { CLI_BUNDLE, CLI_CODE_CACHE, CLI_CODE_CACHE_NAME, CLI_MODULES_ENTRY, cliBundleIsCurrent } = bundleScript;

test('the build left a bundle as new as its modules, and V8 takes its code cache in a process started as probefleet is', async (t) => {
  assert.ok(cliBundleIsCurrent(), 'dist/cli/probefleet.bundle.cjs is older than tsc output: run npm run build');
  if (!existsSync(CLI_CODE_CACHE)) {
    const others = readdirSync(path.dirname(CLI_CODE_CACHE)).filter((name) => CLI_CODE_CACHE_NAME.test(name));
    assert.notDeepEqual(
      others,
      [],
      `the build wrote no code cache (${path.basename(CLI_CODE_CACHE)} or another Node's)`,
    );
    // test/node-24.sh runs this file under a Node that did not build dist/.
    t.skip(`the build ran under another Node (${others.join(', ')}): here the bundle is compiled without a cache`);
    return;
  }
  // A process of its own, with node's flags as bin/probefleet.js has them: V8 refuses a cache made
  // under other flags, and the test runner's are not a user's.
  const check = `
    const { compileCliBundle, readCliCodeCache } = await import(${JSON.stringify(new URL('../../cli/bundle-script.cjs', import.meta.url).href)});
    const cache = readCliCodeCache();
    process.stdout.write(JSON.stringify({ bytes: cache?.length ?? 0, rejected: compileCliBundle(cache).cachedDataRejected }));`;
  const outcome = await new Promise<CliOutcome>((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', check], { cwd: REPO_ROOT }, (err, stdout, stderr) =>
      resolve({ code: err ? 1 : 0, stdout, stderr }),
    );
  });
  assert.equal(outcome.code, 0, outcome.stderr);
  const { bytes, rejected } = JSON.parse(outcome.stdout) as { bytes: number; rejected: boolean };
  assert.ok(bytes > 100_000, `a code cache of ${bytes} bytes`);
  assert.equal(rejected, false, 'V8 refused the code cache the build wrote');
});

test('a file of tsc output newer than the bundle (a tsc alone, or tsc --watch rewriting one file) makes the bundle stale', () => {
  const input = path.join(path.dirname(CLI_MODULES_ENTRY), 'commands/plan.js');
  const { atime, mtime } = statSync(input);
  assert.ok(cliBundleIsCurrent(), 'current before');
  try {
    utimesSync(input, atime, new Date(Date.now() + 60_000));
    assert.equal(cliBundleIsCurrent(), false, 'commands/plan.js rewritten after the bundle');
  } finally {
    utimesSync(input, atime, mtime);
  }
  assert.ok(cliBundleIsCurrent(), 'current again');
});

test('the bundle answers as its modules do: output, errors and exit status', async () => {
  const dir = tempDir('probefleet-cli-bundle-');
  const badPlan = path.join(dir, 'bad.yaml');
  await writeFile(badPlan, 'name: bad\ntargets: [{ name: api, url: "ftp://127.0.0.1/" }]\nexperiments: []\n');
  const cases = [
    ['--help'],
    ['--version'],
    ['plan', 'validate', 'examples/compose-nightly.yaml'],
    ['plan', 'expand', 'examples/compose-nightly.yaml'],
    ['plan', 'validate', badPlan],
    ['run', '--help'],
    ['no-such-command'],
  ];
  for (const args of cases) {
    const [bundled, modules] = await Promise.all([runCli(args), runCli(args, { entry: CLI_MODULES_ENTRY })]);
    assert.deepEqual(
      { ...bundled, stderr: bundled.stderr.replaceAll(CLI, 'CLI') },
      { ...modules, stderr: modules.stderr.replaceAll(CLI_MODULES_ENTRY, 'CLI') },
      `probefleet ${args.join(' ')}`,
    );
    if (args[0] === 'plan' && args[2] === badPlan) assert.equal(bundled.code, 2, bundled.stderr);
  }
});

test('the bundle is ASCII only (V8 would hold it as a two-byte string otherwise)', () => {
  const outside = readFileSync(CLI_BUNDLE).findIndex((byte) => byte > 0x7f);
  assert.equal(outside, -1, `dist/cli/probefleet.bundle.cjs has a byte outside ASCII at ${outside}`);
});
