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

/** "1 connection", "6 connections". */
export function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}
