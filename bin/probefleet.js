#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm ci` through the prepare script, or `npm run build`).
// It runs as one script compiled from V8's code cache (cli/bundle-script.ts), or, where a file that
// bundle was built from is newer than it (a `tsc` run alone, `tsc --watch`), as the modules.
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const bundleScript = new URL('../dist/cli/bundle-script.js', import.meta.url);
if (!existsSync(bundleScript)) {
  process.stderr.write('probefleet: dist/ is missing; run `npm run build` (npm ci does it for you)\n');
  process.exit(1);
}
const { CLI_MODULES_ENTRY, cliBundleIsCurrent, readCliCodeCache, runCliBundle } = await import(bundleScript.href);
if (cliBundleIsCurrent()) runCliBundle(readCliCodeCache());
else await import(pathToFileURL(CLI_MODULES_ENTRY).href);
