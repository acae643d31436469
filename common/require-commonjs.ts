// The heavy CommonJS packages that only some commands load (ioredis, pino) are required with this,
// not imported: on Node 20 an ES module's import of a CommonJS package takes a slower path than
// require() (it also parses the package's source for its export names), measured at 10 to 50 ms
// more start-up for each. The light ones every command loads (yaml, cron-parser) are imported: the
// CLI's bundle holds them (cli/build-bundle.ts). Types come from `typeof import('package')`.
import { createRequire } from 'node:module';

export const requireCommonJs = createRequire(import.meta.url);
