// Structured logs (pino) on stderr, so stdout stays free for tables and JSON.
import type { DestinationStream, Logger } from 'pino';
import { REDACTED } from '../contracts/secrets.js';
import { printableJson } from './printable.js';
import { requireCommonJs } from './require-commonjs.js';

export type { Logger };

/** pino's levels, and silent: what --log-level and PROBEFLEET_LOG_LEVEL may name. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Header values never reach a log line: any header of a plan may carry a credential, and header
 * names come in any case (pino's paths are case-sensitive), so every value under a `headers`
 * object is redacted, up to the depth a job's target sits at (`job.target.headers`).
 */
export const REDACTED_PATHS = ['headers.*', '*.headers.*', '*.*.headers.*'];

export function createLogger(
  name: string,
  level = process.env.PROBEFLEET_LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  const { pino } = requireCommonJs('pino') as typeof import('pino');
  return pino(
    {
      name,
      level,
      redact: { paths: REDACTED_PATHS, censor: REDACTED },
      // JSON escapes C0 controls itself; C1 controls and bidi overrides a server sent would reach a terminal raw.
      hooks: { streamWrite: printableJson },
    },
    destination ?? pino.destination(2),
  );
}

/**
 * The logger of a command that ends (`schedule list`, `runs`, `run`, ...): at PROBEFLEET_LOG_LEVEL,
 * else warn. It is made, and pino loaded (~25 ms of a start), when something first uses it (a log
 * line, or a look at its level), which for most of these commands is when something goes wrong.
 * Each use reads the logger's property anew: pino replaces its level methods when the level changes.
 */
export function commandLogger(name: string): Logger {
  let logger: Logger | undefined;
  const made = () => (logger ??= createLogger(name, process.env.PROBEFLEET_LOG_LEVEL ?? 'warn'));
  return new Proxy({} as Logger, {
    get: (_, key) => {
      const value = Reflect.get(made(), key);
      return typeof value === 'function' ? value.bind(made()) : value;
    },
    set: (_, key, value) => Reflect.set(made(), key, value),
    has: (_, key) => Reflect.has(made(), key),
  });
}
