import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bootstrap, median, medianDifference, percentile, percentiles, prng } from '../../common/stats.js';

test('percentiles interpolate between closest ranks', () => {
  assert.equal(percentile([1, 2, 3, 4], 50), 2.5);
  assert.equal(percentile([10], 95), 10);
  assert.equal(median([5, 1, 3]), 3);
  assert.deepEqual(percentiles([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]), {
    p50: 11,
    p95: 20,
    p99: 20.8,
    n: 21,
  });
  assert.equal(percentiles([]), undefined);
});

test('the median difference interval covers a known shift and excludes zero', () => {
  // Two samples with a known shift of 3.0 and deterministic jitter.
  const base = Array.from({ length: 200 }, (_, i) => 1 + ((i * 37) % 100) / 100);
  const shifted = base.map((v) => v + 3);
  const { median: diff, ci95 } = medianDifference(base, shifted);
  assert.ok(Math.abs(diff - 3) < 1e-9);
  assert.ok(ci95[0] <= 3 && 3 <= ci95[1], `${ci95}`);
  assert.ok(ci95[0] > 2.8 && ci95[1] < 3.2, `${ci95}`);
});

test('equal samples give an interval around zero', () => {
  const sample = Array.from({ length: 100 }, (_, i) => (i * 13) % 17);
  const { median: diff, ci95 } = medianDifference(sample, [...sample].reverse());
  assert.equal(diff, 0);
  assert.ok(ci95[0] <= 0 && ci95[1] >= 0);
});

test('a bootstrap resample sorted by counting is the resample sorted, ties and all', () => {
  // The interval as it was defined: each resample's drawn values sorted by comparison.
  function sortingBootstrap(groups: number[][], resamples: number, seed: number) {
    const random = prng(seed);
    const draws = new Float64Array(resamples);
    for (let i = 0; i < resamples; i++) {
      const [b, a] = groups.map((g) => Float64Array.from(g, () => g[Math.floor(random() * g.length)]).sort());
      draws[i] = percentile(b!, 50) - percentile(a!, 50);
    }
    draws.sort();
    return [percentile(draws, 2.5), percentile(draws, 97.5)];
  }
  const random = prng(7);
  for (let round = 0; round < 50; round++) {
    // Few distinct values, so that most draws tie; sizes from 1.
    const group = () => Array.from({ length: 1 + Math.floor(random() * 30) }, () => Math.floor(random() * 8) * 0.5);
    const groups = [group(), group()];
    const { ci95 } = bootstrap(groups, ([b, a]) => [percentile(b!, 50) - percentile(a!, 50)], 200, round);
    assert.deepEqual(ci95[0], sortingBootstrap(groups, 200, round), JSON.stringify(groups));
  }
});
