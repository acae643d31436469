// `node dist/cli/write-code-cache.js ARGS...`: runs `probefleet ARGS` from the bundle, compiled
// without a cache, and writes V8's code cache of it when the command exits (cli/build-bundle.ts).
import { writeFileSync } from 'node:fs';
import bundleScript from './bundle-script.cjs';

const { CLI_CODE_CACHE, runCliBundle } = bundleScript;

const script = runCliBundle(undefined);
process.once('exit', () => writeFileSync(CLI_CODE_CACHE, script.createCachedData()));
