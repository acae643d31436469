// How numbers and text from a run are shown, shared by every renderer.
import { printableDeep } from '../../common/printable.js';

/**
 * A run (or a comparison of two) as every renderer shows it (terminal text, Markdown, HTML, CSV):
 * each string in it, whether a target sent it (a certificate subject, an answer's first bytes) or
 * a plan holds it (a URL, the description), with control characters escaped (`\x1b[31m`), so no
 * value can drive a terminal or forge a line. Each renderer escapes the result for its own format besides.
 */
export function shown<T>(data: T): T {
  return printableDeep(data);
}

/** Milliseconds for people: 0.44 ms, 44.0 ms, 31,860 ms; "-" when not measured. */
export function formatMs(value: number | undefined): string {
  if (value === undefined) return '-';
  if (value >= 1000) return `${Math.round(value).toLocaleString('en-US')} ms`;
  return `${value.toFixed(value < 10 ? 2 : 1)} ms`;
}

/** Counts and byte sizes for people: 179,500; "-" when not measured. */
export function formatCount(value: number | undefined): string {
  return value === undefined ? '-' : Math.round(value).toLocaleString('en-US');
}

/** A share as a percentage with one decimal: 11.4%. */
export function formatPercent(part: number | undefined, whole: number | undefined): string {
  return part === undefined || !whole ? '-' : `${((part / whole) * 100).toFixed(1)}%`;
}
