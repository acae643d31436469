// Where a result was measured, for ordering rows and grouping bars the same way in every view.
interface Placed {
  region: string;
  target: string;
}

/** Region, then target: the order of every table. */
export const byPlace = (a: Placed, b: Placed) => a.region.localeCompare(b.region) || a.target.localeCompare(b.target);

/** Results in groups of one target each, in the order the targets first appear. */
export function byTarget<R extends Placed>(results: R[]): [string, R[]][] {
  const groups = new Map<string, R[]>();
  for (const r of results) groups.set(r.target, [...(groups.get(r.target) ?? []), r]);
  return [...groups];
}

/** A bar's label: prefixed with its region when the results come from more than one. */
export function barLabeller(results: Placed[]): (r: Placed, label: string) => string {
  const regions = new Set(results.map((r) => r.region));
  return regions.size > 1 ? (r, label) => `${r.region} · ${label}` : (_r, label) => label;
}

/** "failed: CONNECTION_REFUSED" for a job that measured nothing, else undefined. */
export function nothingMeasured(r: {
  summary: { requests: number; errors: number };
  error: { code: string } | null;
}): string | undefined {
  return r.summary.requests === r.summary.errors ? `failed: ${r.error?.code ?? 'no answer'}` : undefined;
}

/** A job's errors: the count, or "not run" for one that failed before its first request (refused
 * by the target policy, a secret not set), which would otherwise read as "0 errors". */
export function errorsCell(r: {
  summary: { requests: number; errors: number };
  error: { code: string } | null;
}): string {
  return r.error && r.summary.requests === 0 ? 'not run' : String(r.summary.errors);
}
