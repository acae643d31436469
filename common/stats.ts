// Order statistics and intervals. Percentiles use linear interpolation between closest
// ranks (the R-7 / NumPy default), so small samples give the numbers people expect.

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new RangeError('percentile of an empty sample');
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

export function sortedCopy(values: readonly number[]): number[] {
  return Float64Array.from(values).sort() as unknown as number[];
}

export function median(values: readonly number[]): number {
  return percentile(sortedCopy(values), 50);
}

/** p50, p95 and p99 of a sample, or undefined for an empty one. */
export function percentiles(
  values: readonly number[],
): { p50: number; p95: number; p99: number; n: number } | undefined {
  if (values.length === 0) return undefined;
  const sorted = sortedCopy(values);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), n: values.length };
}

/** Deterministic PRNG (mulberry32) so a report's intervals (and the lab's generated bodies) are reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function resampledMedian(values: readonly number[], random: () => number, scratch: Float64Array): number {
  for (let i = 0; i < values.length; i++) scratch[i] = values[Math.floor(random() * values.length)];
  scratch.sort();
  return percentile(scratch as unknown as number[], 50);
}

/**
 * median(b) − median(a) with a percentile-bootstrap 95% interval: each resample draws
 * both groups with replacement. Medians are robust to the odd slow request that would
 * drag a mean.
 */
export function medianDifference(
  a: readonly number[],
  b: readonly number[],
  resamples = 2000,
  seed = 0x5eed,
): { median: number; ci95: [number, number] } {
  const random = prng(seed);
  const scratchA = new Float64Array(a.length);
  const scratchB = new Float64Array(b.length);
  const diffs = new Float64Array(resamples);
  for (let i = 0; i < resamples; i++) {
    diffs[i] = resampledMedian(b, random, scratchB) - resampledMedian(a, random, scratchA);
  }
  diffs.sort();
  const sorted = diffs as unknown as number[];
  return { median: median(b) - median(a), ci95: [percentile(sorted, 2.5), percentile(sorted, 97.5)] };
}
