// `npm run build`'s last step, after tsc: the CLI as one CommonJS script and V8's code cache of it
// (docs/decisions/034-cli-bundle-and-code-cache.md). Node 20 caches no compiled ES modules, so
// every start of `probefleet` read, resolved and compiled some 270 module files (zod 95, yaml 72)
// before it did anything. bin/probefleet.js runs the bundle from its cache.
//
// The bundle is built from tsc's output (dist/), so tsc alone defines what the code does. It holds
// our modules and the light packages most commands load; the heavy ones stay where npm put them
// and are required when a command needs them, as before. The cache is V8's code for the functions
// a `plan validate` of an example plan compiled (the code most commands share: yargs, zod, the
// plan's schemas, the YAML reader), written by cli/write-code-cache.ts.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import bundleScript from './bundle-script.cjs';

const { CLI_BUNDLE, CLI_BUNDLE_INPUTS, CLI_CODE_CACHE_NAME, CLI_MODULES_ENTRY } = bundleScript;

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The packages inside the bundle: those most commands load, many small modules each (yaml is 72
 * files, zod 95). The heavy ones that only some commands need (BullMQ, ioredis, undici,
 * prom-client, pino) are required from node_modules when a command loads them. */
const BUNDLED_PACKAGES = ['zod', 'yargs', 'yaml', 'cron-parser', 're2js'];

/**
 * `import.meta` in a bundled module means that module's own file, as it did unbundled: worker
 * threads, the isolated-job process and `createRequire` are found from it. Each module's path is
 * written relative to the bundle's directory. (The text is replaced wherever it stands, comments
 * included, which changes nothing there.)
 */
const importMetaOfEachFile: Plugin = {
  name: 'import-meta-of-each-file',
  setup(builder) {
    builder.onLoad({ filter: /\.m?js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('import.meta')) return undefined;
      const fromBundle = path.relative(path.dirname(CLI_BUNDLE), args.path);
      return {
        contents: source.replaceAll('import.meta', `__importMetaOf(${JSON.stringify(fromBundle)})`),
        loader: 'js',
      };
    });
  },
};

/** The bundle is written as the function CommonJS wraps a file in: compiling it makes no 2 MB
 * copy of the source to wrap it at every start (cli/bundle-script.cts). */
const COMMONJS_WRAPPER = { start: '(function (exports, require, module, __filename, __dirname) {', end: '\n})' };

/** `import.meta` of the file at `fromBundle`, for the plugin above. Strict mode first, as esbuild's
 * own prologue would have it (ES modules are strict). The bundle's directory is kept at once: a
 * bundled package's module-level `__dirname` (yargs has one) becomes a `var` of the bundle's scope,
 * and takes the name over. */
const IMPORT_META_OF = `"use strict";
const __bundleDirectory = __dirname;
const __importMetaOf = (fromBundle) => {
  const filename = require('node:path').resolve(__bundleDirectory, fromBundle);
  const url = require('node:url').pathToFileURL(filename).href;
  const resolve = (specifier) => require('node:url').pathToFileURL(require('node:module').createRequire(filename).resolve(specifier)).href;
  return { url, filename, dirname: require('node:path').dirname(filename), resolve };
};`;

async function buildCliBundle(): Promise<void> {
  // A cache left from an earlier bundle must not meet the new one: V8 checks its source's length only.
  const directory = path.dirname(CLI_BUNDLE);
  for (const name of readdirSync(directory).filter((file) => CLI_CODE_CACHE_NAME.test(file)))
    rmSync(path.join(directory, name));
  const { dependencies } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const { metafile } = await build({
    entryPoints: [CLI_MODULES_ENTRY],
    outfile: CLI_BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${process.versions.node.split('.')[0]}`,
    external: Object.keys(dependencies).filter((name) => !BUNDLED_PACKAGES.includes(name)),
    // `await import('undici')` made require(): a script run by vm has no loader for import().
    supported: { 'dynamic-import': false },
    banner: { js: `${COMMONJS_WRAPPER.start}${IMPORT_META_OF}` },
    footer: { js: COMMONJS_WRAPPER.end },
    plugins: [importMetaOfEachFile],
    logLevel: 'warning',
    metafile: true,
    // Without comments and indentation the source is 2.1 MB, not 3.0: every start reads it, ~15 ms
    // less here. Names stay; a stack trace names a column of the bundle (the modules, run as
    // docs/decisions/034 says, give file and line). The packages' licence comments go to
    // probefleet.bundle.cjs.LEGAL.txt.
    minifyWhitespace: true,
    legalComments: 'external',
  });
  // esbuild escapes characters outside ASCII in code (charset: 'ascii'); one left anywhere would
  // make V8 hold the whole source as a two-byte string, read and kept at twice the size at every start.
  const outsideAscii = readFileSync(CLI_BUNDLE).findIndex((byte) => byte > 0x7f);
  if (outsideAscii >= 0) throw new Error(`${CLI_BUNDLE}: a character outside ASCII at byte ${outsideAscii}`);
  // What bin/probefleet.js checks the bundle against: tsc's files in it (metafile paths are the
  // working directory's).
  const inputs = Object.keys(metafile.inputs)
    .map((input) => path.relative(directory, path.resolve(input)))
    .filter((file) => !file.split(path.sep).includes('node_modules'));
  writeFileSync(CLI_BUNDLE_INPUTS, `${JSON.stringify(inputs)}\n`);
  execFileSync(
    process.execPath,
    [
      fileURLToPath(new URL('./write-code-cache.js', import.meta.url)),
      'plan',
      'validate',
      'examples/compose-nightly.yaml',
    ],
    // Its errors are the build's: a bundle that cannot validate a plan must not be shipped.
    { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

await buildCliBundle();
