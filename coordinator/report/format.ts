// How numbers and text from a run are shown, shared by every renderer.
import { printableDeep } from '../../common/printable.js';
import { thousands } from '../../common/plural.js';

/**
 * A run (or a comparison of two) as every renderer shows it (terminal text, Markdown, HTML, CSV):
 * each string in it, whether a target sent it (a certificate subject, an answer's first bytes) or
 * a plan holds it (a URL, the description), with control characters escaped (`\x1b[31m`), so no
 * value can drive a terminal or forge a line. Each renderer escapes the result for its own format besides.
 */
export function shown<T>(data: T): T {
  return printableDeep(data);
}

// The worker's findings write milliseconds the same way, so the formatter lives below both.
export { formatMs } from '../../common/format-ms.js';

/** Counts and byte sizes for people: 179,500; "-" when not measured. */
export function formatCount(value: number | undefined): string {
  return value === undefined ? '-' : thousands(Math.round(value));
}

/** A share as a percentage with one decimal: 11.4%. */
export function formatPercent(part: number | undefined, whole: number | undefined): string {
  return part === undefined || !whole ? '-' : `${((part / whole) * 100).toFixed(1)}%`;
}
