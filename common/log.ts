// Structured logs (pino) on stderr, so stdout stays free for tables and JSON.
import { pino, type Logger } from 'pino';

export type { Logger };

/** Header values from plans may carry credentials; they never reach a log line. */
const REDACT = [
  'headers.authorization',
  'headers.cookie',
  'headers["proxy-authorization"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["proxy-authorization"]',
];

export function createLogger(name: string, level = process.env.PROBEFLEET_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name, level, redact: { paths: REDACT, censor: '[redacted]' } }, pino.destination(2));
}
