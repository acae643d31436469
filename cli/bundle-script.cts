// The CLI as one script (cli/build-bundle.ts makes it; docs/decisions/034-cli-bundle-and-code-cache.md):
// where it lives, and how it is compiled and run with V8's code cache. bin/probefleet.js runs it;
// cli/write-code-cache.ts runs it once at build time to make the cache. A CommonJS module, as
// bin/probefleet.js is: a command that starts as an ES module pays ~8 ms for Node's ES module loader.
import fs = require('node:fs');
import nodeModule = require('node:module');
import path = require('node:path');
import vm = require('node:vm');

/** tsc's output, which the bundle is built from. */
const CLI_MODULES_ENTRY = path.join(__dirname, 'probefleet.js');
const CLI_BUNDLE = path.join(__dirname, 'probefleet.bundle.cjs');
/** The files of dist/ the bundle was built from, relative to dist/cli/ (a JSON list). */
const CLI_BUNDLE_INPUTS = path.join(__dirname, 'probefleet.bundle.inputs.json');
/** V8's code cache of the bundle, named for the Node whose build made it (a build keeps only its
 * own): V8 refuses another version's, and a Node that finds none of its own reads none. */
const CLI_CODE_CACHE = path.join(__dirname, `probefleet.bundle.${process.version}.code-cache`);
const CLI_CODE_CACHE_NAME = /^probefleet\.bundle\.v.+\.code-cache$/;

/** Whether the bundle holds tsc's latest output: none of the files it was built from is newer. A
 * `tsc` run alone, or `tsc --watch` rewriting one file, leaves it behind. (~260 stats: ~4 ms of a
 * command's start.) */
function cliBundleIsCurrent(): boolean {
  const bundleBuiltAt = fs.statSync(CLI_BUNDLE, { throwIfNoEntry: false })?.mtimeMs;
  if (bundleBuiltAt === undefined) return false;
  let inputs: string[];
  try {
    inputs = JSON.parse(fs.readFileSync(CLI_BUNDLE_INPUTS, 'utf8')) as string[];
  } catch {
    return false;
  }
  return inputs.every(
    (file) => (fs.statSync(`${__dirname}/${file}`, { throwIfNoEntry: false })?.mtimeMs ?? Infinity) <= bundleBuiltAt,
  );
}

/** The bundle, written as the function CommonJS wraps a file in (cli/build-bundle.ts), compiled
 * from `cachedData` when V8 accepts it: its version and flags must be this process's, and the
 * source as long as it was. */
function compileCliBundle(cachedData: Buffer | undefined): vm.Script {
  return new vm.Script(fs.readFileSync(CLI_BUNDLE, 'utf8'), { filename: CLI_BUNDLE, cachedData });
}

/** Runs `probefleet` from the bundle. Returns its script, whose createCachedData() then holds every
 * function compiled so far. */
function runCliBundle(cachedData: Buffer | undefined): vm.Script {
  const script = compileCliBundle(cachedData);
  const module = { exports: {} };
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper(module.exports, nodeModule.createRequire(CLI_BUNDLE), module, CLI_BUNDLE, __dirname);
  return script;
}

/** The code cache the build wrote, if there is one. */
function readCliCodeCache(): Buffer | undefined {
  try {
    return fs.readFileSync(CLI_CODE_CACHE);
  } catch {
    return undefined;
  }
}

export = {
  CLI_MODULES_ENTRY,
  CLI_BUNDLE,
  CLI_BUNDLE_INPUTS,
  CLI_CODE_CACHE,
  CLI_CODE_CACHE_NAME,
  cliBundleIsCurrent,
  compileCliBundle,
  runCliBundle,
  readCliCodeCache,
};
