#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm ci` through the prepare script, or `npm run build`).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli/probefleet.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('probefleet: dist/ is missing; run `npm run build` (npm ci does it for you)\n');
  process.exit(1);
}
await import(cli.href);
