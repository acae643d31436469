// HDR histograms as the load probe carries them: the merge of encoded histograms is the
// histogram of the union, exactly; averaging percentiles is not.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  decodeHistogram,
  encodeHistogram,
  mergeHistograms,
  newLatencyHistogram,
  percentilesOf,
  recordMs,
} from '../../common/latency-histogram.js';

/** Deterministic values (ms) with a long tail, like latencies. */
function latencies(seed: number, count: number): number[] {
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  return Array.from({ length: count }, () => 0.2 + random() * 2 + (random() < 0.02 ? random() * 400 : 0));
}

describe('latency histograms', () => {
  test('merging encoded histograms gives the histogram of the union', () => {
    const parts = [latencies(1, 5000), latencies(2, 300), latencies(3, 20_000)];
    const union = newLatencyHistogram();
    const encoded = parts.map((values) => {
      const h = newLatencyHistogram();
      for (const v of values) {
        recordMs(h, v);
        recordMs(union, v);
      }
      return encodeHistogram(h);
    });
    const merged = mergeHistograms(encoded);
    assert.equal(merged.totalCount, 25_300);
    assert.equal(encodeHistogram(merged).data, encodeHistogram(union).data, 'same counts in every bucket');
    for (const p of [0, 1, 10, 50, 90, 99, 99.9, 99.99, 100]) {
      assert.equal(merged.getValueAtPercentile(p), union.getValueAtPercentile(p), `p${p}`);
    }
    assert.deepEqual(percentilesOf(merged), percentilesOf(union));
  });

  test('the mean of two p99s is not the p99 of both: that is why results carry histograms', () => {
    const fast = newLatencyHistogram();
    const slow = newLatencyHistogram();
    for (let i = 0; i < 10_000; i++) recordMs(fast, 1);
    for (let i = 0; i < 100; i++) recordMs(slow, 100);
    const averaged = (percentilesOf(fast).p99 + percentilesOf(slow).p99) / 2;
    const merged = percentilesOf(mergeHistograms([encodeHistogram(fast), encodeHistogram(slow)]));
    assert.ok(Math.abs(merged.p99 - 1) < 0.01, `merged p99 ${merged.p99}`);
    assert.ok(averaged > 50, `averaged p99 ${averaged}`);
  });

  test('values are microseconds inside, milliseconds out, 3 significant digits', () => {
    const h = newLatencyHistogram();
    for (const v of [0.5, 1.5, 1.5, 12.345, 250]) recordMs(h, v);
    const p = percentilesOf(decodeHistogram(encodeHistogram(h)));
    assert.equal(p.n, 5);
    assert.ok(Math.abs(p.p50 - 1.5) / 1.5 < 0.001, `p50 ${p.p50}`);
    assert.ok(Math.abs(p.max - 250) / 250 < 0.001, `max ${p.max}`);
  });

  test('a value beyond one hour is recorded at the top, not thrown', () => {
    const h = newLatencyHistogram();
    recordMs(h, 10 * 3_600_000);
    assert.equal(h.totalCount, 1);
    assert.ok(percentilesOf(h).max >= 3_599_000);
  });

  test('an empty histogram has zero percentiles and n = 0', () => {
    assert.deepEqual(percentilesOf(newLatencyHistogram()), { p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0, n: 0 });
  });
});
