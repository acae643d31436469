#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm ci` through the prepare script, or `npm run build`).
// It runs as one script compiled from V8's code cache (cli/bundle-script.cts), or, where a file that
// bundle was built from is newer than it (a `tsc` run alone, `tsc --watch`), as the modules.
// CommonJS (bin/package.json): a command that starts as an ES module pays for Node's ES module loader.
const { existsSync } = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const bundleScript = path.join(__dirname, '../dist/cli/bundle-script.cjs');
if (!existsSync(bundleScript)) {
  process.stderr.write('probefleet: dist/ is missing or out of date; run `npm run build` (npm ci does it for you)\n');
  process.exit(1);
}
const { CLI_MODULES_ENTRY, cliBundleIsCurrent, readCliCodeCache, runCliBundle } = require(bundleScript);
if (cliBundleIsCurrent()) runCliBundle(readCliCodeCache());
else import(pathToFileURL(CLI_MODULES_ENTRY).href);
