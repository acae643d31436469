// Records every module a process loads: `node --import <this file, compiled>` with
// PROBEFLEET_MODULES_FILE set appends each module's file URL to that file, one a line (repeats
// possible). ES modules as Node's module hooks load them (this file registers itself as the hooks,
// which run in a thread of their own); CommonJS modules that packages require(), which pass by the
// hooks on Node 20, from the require cache when the process exits. Used by
// test/unit/cli-module-graph.test.ts (modulesLoadedBy).
import { appendFileSync } from 'node:fs';
import { createRequire, register, type LoadHook } from 'node:module';
import { pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';

const out = process.env.PROBEFLEET_MODULES_FILE;

if (out && isMainThread) {
  register(import.meta.url);
  const { cache } = createRequire(import.meta.url);
  process.on('exit', () => {
    appendFileSync(
      out,
      Object.keys(cache)
        .map((file) => `${pathToFileURL(file).href}\n`)
        .join(''),
    );
  });
}

export const load: LoadHook = async (url, context, nextLoad) => {
  const loaded = await nextLoad(url, context);
  if (out) appendFileSync(out, `${url}\n`);
  return loaded;
};
