// Milliseconds as people read them, in the probes' findings and in every report.

import { thousands } from './plural.js';

/**
 * 0.44 ms, 44.0 ms, 31,860 ms; "-" when not measured. The findings the probes and the reuse rules
 * write keep one decimal past 1000 ms too (31860.0 ms, `{ groupThousands: false }`), so their text
 * reads as it always has.
 */
export function formatMs(value: number | undefined, { groupThousands = true } = {}): string {
  if (value === undefined) return '-';
  if (groupThousands && value >= 1000) return `${thousands(Math.round(value))} ms`;
  return `${value.toFixed(value < 10 ? 2 : 1)} ms`;
}
