// `node dist/cli/write-code-cache.js ARGS...`: runs `probefleet ARGS` from the bundle, compiled
// without a cache, and writes V8's code cache of it when the command exits (cli/build-bundle.ts).
import { writeFileSync } from 'node:fs';
import { CLI_CODE_CACHE, runCliBundle } from './bundle-script.js';

const script = runCliBundle(undefined);
process.once('exit', () => writeFileSync(CLI_CODE_CACHE, script.createCachedData()));
