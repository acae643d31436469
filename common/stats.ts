// Order statistics and intervals. Percentiles use linear interpolation between closest
// ranks (the R-7 / NumPy default), so small samples give the numbers people expect.

/** The fewest values for which the p-th percentile means one in 100 / (100 - p): 20 for p95, 100 for p99. */
export function fewestValuesToShow(p: number): number {
  return Math.ceil(100 / (100 - p) - 1e-9);
}

export function percentile(sorted: ArrayLike<number>, p: number): number {
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

/**
 * Percentile-bootstrap 95% intervals of statistics of several groups. Each resample draws every
 * group with replacement, in the order given, and sorts it; `statistic` reads the sorted groups
 * and returns one number per statistic. The estimate is the statistic of the groups themselves.
 * Seeded, so the same samples always give the same intervals.
 */
export function bootstrap(
  groups: readonly (readonly number[])[],
  statistic: (sorted: readonly Float64Array[]) => number[],
  resamples = 2000,
  seed = 0x5eed,
): { estimate: number[]; ci95: [number, number][] } {
  const random = prng(seed);
  const sortedGroups = groups.map((g) => Float64Array.from(g).sort());
  // A resample is sorted by counting how often each value's rank was drawn: the same sorted
  // resample as sorting the drawn values, in time linear in the group (the comparison bootstraps
  // every target of a run, and sorting 2,000 resamples of each was most of its time).
  const rankOf = groups.map((g, k) => ranksInSorted(g, sortedGroups[k]));
  const counts = groups.map((g) => new Uint32Array(g.length));
  const scratch = groups.map((g) => new Float64Array(g.length));
  const estimate = statistic(sortedGroups);
  const draws = estimate.map(() => new Float64Array(resamples));
  for (let i = 0; i < resamples; i++) {
    for (let g = 0; g < groups.length; g++) resampleSorted(random, rankOf[g], sortedGroups[g], counts[g], scratch[g]);
    statistic(scratch).forEach((value, k) => {
      draws[k][i] = value;
    });
  }
  return {
    estimate,
    ci95: draws.map((d) => {
      d.sort();
      return [percentile(d, 2.5), percentile(d, 97.5)];
    }),
  };
}

/** Draws `sorted.length` values of `sorted` with replacement (by their original positions, whose
 * ranks are `ranks`) into `out`, sorted. */
function resampleSorted(
  random: () => number,
  ranks: Uint32Array,
  sorted: Float64Array,
  count: Uint32Array,
  out: Float64Array,
): void {
  const n = sorted.length;
  count.fill(0);
  for (let j = 0; j < n; j++) count[ranks[Math.floor(random() * n)]]++;
  let at = 0;
  for (let r = 0; r < n; r++) for (let c = count[r]; c > 0; c--) out[at++] = sorted[r];
}

/** For each value of `values`, its index in `sorted` (the same values sorted); equal values share one. */
function ranksInSorted(values: readonly number[], sorted: Float64Array): Uint32Array {
  const ranks = new Uint32Array(values.length);
  const first = new Map<number, number>();
  for (let r = sorted.length - 1; r >= 0; r--) first.set(sorted[r], r);
  for (let j = 0; j < values.length; j++) ranks[j] = first.get(values[j])!;
  return ranks;
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
  // b is drawn before a in each resample (the order this interval has always been computed in).
  const { ci95 } = bootstrap([b, a], ([sb, sa]) => [percentile(sb, 50) - percentile(sa, 50)], resamples, seed);
  return { median: median(b) - median(a), ci95: ci95[0] };
}

/** z of a two-sided 95% interval. */
const Z95 = 1.959963984540054;

/** Wilson score 95% interval of a proportion k/n (good near 0 and 1, where the normal one is not). */
export function wilsonInterval(k: number, n: number): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const z2 = Z95 * Z95;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const half = (Z95 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator;
  // Exactly 0 and 1 at the ends: rounding must not lift 0 of n above 0.
  return [k === 0 ? 0 : Math.max(0, centre - half), k === n ? 1 : Math.min(1, centre + half)];
}

export interface Estimate {
  value: number;
  ci95: [number, number];
}

/** Above this many values the binomial is replaced by its normal approximation. */
const EXACT_RANKS_UP_TO = 20_000;
/** Rank intervals kept: every job of a run asks for the same few (n, p), each answer costs O(n). */
const RANK_INTERVALS_KEPT = 10_000;
const rankIntervals = new Map<string, readonly [number, number] | undefined>();

/**
 * Distribution-free 95% interval of the p-th percentile of n values: the 1-based ranks [l, u] of
 * the order statistics that bound it, so that the percentile lies between the l-th and u-th
 * smallest value with probability ≥ 95% whatever the distribution (the binomial's tails, 2.5%
 * each; normal approximation for large n). Undefined when n is too small for such ranks to
 * exist (a p95 needs 72 values): the sample's extremes would understate it.
 */
export function percentileRankInterval(n: number, p: number): readonly [number, number] | undefined {
  const key = `${n} ${p}`;
  if (rankIntervals.has(key)) return rankIntervals.get(key);
  const ranks = rankIntervalOf(n, p);
  if (rankIntervals.size >= RANK_INTERVALS_KEPT) rankIntervals.clear();
  rankIntervals.set(key, ranks && Object.freeze(ranks));
  return ranks;
}

function rankIntervalOf(n: number, p: number): [number, number] | undefined {
  const q = p / 100;
  if (n === 0 || q <= 0 || q >= 1) return undefined;
  let lower: number;
  let upper: number;
  if (n > EXACT_RANKS_UP_TO) {
    const spread = Z95 * Math.sqrt(n * q * (1 - q));
    lower = Math.floor(n * q - spread);
    upper = Math.ceil(n * q + spread + 1);
  } else {
    // cdf[k] = P(B ≤ k) for B ~ Binomial(n, q), from log pmf so large n does not underflow.
    const logQ = Math.log(q);
    const log1Q = Math.log1p(-q);
    let logPmf = n * log1Q;
    let cdf = 0;
    lower = 0;
    upper = n + 1;
    for (let k = 0; k <= n; k++) {
      if (k > 0) logPmf += Math.log((n - k + 1) / k) + logQ - log1Q;
      const below = cdf; // P(B ≤ k − 1)
      cdf += Math.exp(logPmf);
      // l: the largest rank with P(B < l) ≤ 2.5%; u: the smallest with P(B ≥ u) ≤ 2.5%.
      if (below <= 0.025) lower = k;
      if (upper === n + 1 && 1 - below <= 0.025) upper = k;
    }
  }
  return lower >= 1 && upper <= n ? [lower, upper] : undefined;
}

/** The p-th percentile of sorted values with its distribution-free 95% interval (undefined: too few values). */
export function percentileInterval(sorted: ArrayLike<number>, p: number): Estimate | undefined {
  const ranks = percentileRankInterval(sorted.length, p);
  return ranks && { value: percentile(sorted, p), ci95: [sorted[ranks[0] - 1], sorted[ranks[1] - 1]] };
}
