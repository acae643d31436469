// Structured logs (pino) on stderr, so stdout stays free for tables and JSON.
import type { DestinationStream, Logger } from 'pino';
import { REDACTED } from '../contracts/secrets.js';
import { printableJson } from './printable.js';
import { requireCommonJs } from './require-commonjs.js';

const { pino } = requireCommonJs('pino') as typeof import('pino');

export type { Logger };

/**
 * Header values never reach a log line: any header of a plan may carry a credential, and header
 * names come in any case (pino's paths are case-sensitive), so every value under a `headers`
 * object is redacted, up to the depth a job's target sits at (`job.target.headers`).
 */
export const REDACTED_PATHS = ['headers.*', '*.headers.*', '*.*.headers.*'];

export function createLogger(
  name: string,
  level = process.env.PROBEFLEET_LOG_LEVEL ?? 'info',
  destination: DestinationStream = pino.destination(2),
): Logger {
  return pino(
    {
      name,
      level,
      redact: { paths: REDACTED_PATHS, censor: REDACTED },
      // JSON escapes C0 controls itself; C1 controls and bidi overrides a server sent would reach a terminal raw.
      hooks: { streamWrite: printableJson },
    },
    destination,
  );
}
