// HDR latency histograms: what the load probe records into, carries in its result (standard
// compressed V2 encoding, readable by any HdrHistogram library), and what the coordinator
// merges across workers and regions. Percentiles are read from a histogram, never averaged.
import { build, decodeFromCompressedBase64, encodeIntoCompressedBase64, type Histogram } from 'hdr-histogram-js';
import type { EncodedHistogram, LatencyPercentiles } from '../contracts/probes/load.js';

export type { Histogram };

/** Values are microseconds from 1 µs to one hour (longer than any job may run). */
const HIGHEST_TRACKABLE_US = 3_600_000_000;
const SIGNIFICANT_DIGITS = 3;

export function newLatencyHistogram(): Histogram {
  return build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_TRACKABLE_US,
    numberOfSignificantValueDigits: SIGNIFICANT_DIGITS,
    bitBucketSize: 32,
    useWebAssembly: false,
  });
}

/** Records a duration given in milliseconds (performance.now() differences). */
export function recordMs(histogram: Histogram, ms: number): void {
  const us = Math.round(ms * 1000);
  histogram.recordValue(Math.min(us, HIGHEST_TRACKABLE_US));
}

export function encodeHistogram(histogram: Histogram): EncodedHistogram {
  return { encoding: 'hdr-v2-compressed-base64', unit: 'us', data: encodeIntoCompressedBase64(histogram) };
}

export function decodeHistogram(encoded: EncodedHistogram): Histogram {
  return decodeFromCompressedBase64(encoded.data, 32, false);
}

/** One histogram holding every value of the given ones: exact, whatever their number. */
export function mergeHistograms(encoded: readonly EncodedHistogram[]): Histogram {
  const merged = newLatencyHistogram();
  for (const e of encoded) merged.add(decodeHistogram(e));
  return merged;
}

const toMs = (us: number) => us / 1000;

export function percentilesOf(histogram: Histogram): LatencyPercentiles {
  if (histogram.totalCount === 0) return { p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0, n: 0 };
  return {
    p50: toMs(histogram.getValueAtPercentile(50)),
    p90: toMs(histogram.getValueAtPercentile(90)),
    p99: toMs(histogram.getValueAtPercentile(99)),
    p999: toMs(histogram.getValueAtPercentile(99.9)),
    // The top of the largest value's bucket, like every percentile: the same after a merge.
    max: toMs(histogram.getValueAtPercentile(100)),
    mean: toMs(histogram.mean),
    n: histogram.totalCount,
  };
}
