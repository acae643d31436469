// The CLI as one script (cli/build-bundle.ts makes it; docs/decisions/034-cli-bundle-and-code-cache.md):
// where it lives, and how it is compiled and run with V8's code cache. bin/probefleet.js runs it;
// cli/write-code-cache.ts runs it once at build time to make the cache.
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

/** tsc's output, which the bundle is built from. */
export const CLI_MODULES_ENTRY = fileURLToPath(new URL('./probefleet.js', import.meta.url));
export const CLI_BUNDLE = fileURLToPath(new URL('./probefleet.bundle.cjs', import.meta.url));
/** The files of dist/ the bundle was built from, relative to dist/cli/ (a JSON list). */
export const CLI_BUNDLE_INPUTS = fileURLToPath(new URL('./probefleet.bundle.inputs.json', import.meta.url));
/** V8's code cache of the bundle, named for the Node whose build made it (a build keeps only its
 * own): V8 refuses another version's, and a Node that finds none of its own reads none. */
export const CLI_CODE_CACHE = fileURLToPath(
  new URL(`./probefleet.bundle.${process.version}.code-cache`, import.meta.url),
);
export const CLI_CODE_CACHE_NAME = /^probefleet\.bundle\.v.+\.code-cache$/;

/** Whether the bundle holds tsc's latest output: none of the files it was built from is newer. A
 * `tsc` run alone, or `tsc --watch` rewriting one file, leaves it behind. (~260 stats: ~4 ms of a
 * command's start.) */
export function cliBundleIsCurrent(): boolean {
  const bundleBuiltAt = statSync(CLI_BUNDLE, { throwIfNoEntry: false })?.mtimeMs;
  if (bundleBuiltAt === undefined) return false;
  let inputs: string[];
  try {
    inputs = JSON.parse(readFileSync(CLI_BUNDLE_INPUTS, 'utf8')) as string[];
  } catch {
    return false;
  }
  const directory = path.dirname(CLI_BUNDLE);
  return inputs.every(
    (file) => (statSync(`${directory}/${file}`, { throwIfNoEntry: false })?.mtimeMs ?? Infinity) <= bundleBuiltAt,
  );
}

/** The bundle compiled as CommonJS compiles a file (the same wrapper), from `cachedData` when V8
 * accepts it: its version and flags must be this process's, and the source as long as it was. */
export function compileCliBundle(cachedData: Buffer | undefined): vm.Script {
  const source = readFileSync(CLI_BUNDLE, 'utf8');
  return new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: CLI_BUNDLE,
    cachedData,
  });
}

/** Runs `probefleet` from the bundle. Returns its script, whose createCachedData() then holds every
 * function compiled so far. */
export function runCliBundle(cachedData: Buffer | undefined): vm.Script {
  const script = compileCliBundle(cachedData);
  const module = { exports: {} };
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper(module.exports, createRequire(CLI_BUNDLE), module, CLI_BUNDLE, path.dirname(CLI_BUNDLE));
  return script;
}

/** The code cache the build wrote, if there is one. */
export function readCliCodeCache(): Buffer | undefined {
  try {
    return readFileSync(CLI_CODE_CACHE);
  } catch {
    return undefined;
  }
}
