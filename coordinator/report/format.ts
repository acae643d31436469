/** Milliseconds for people: 0.44 ms, 44.0 ms, 31,860 ms; "-" when not measured. */
export function formatMs(value: number | undefined): string {
  if (value === undefined) return '-';
  if (value >= 1000) return `${Math.round(value).toLocaleString('en-US')} ms`;
  return `${value.toFixed(value < 10 ? 2 : 1)} ms`;
}
