// What one job's result offers for comparison: its per-request samples (percentiles of phases
// and handshakes), shares of its requests (errors, new connections), exact byte counts, and
// load figures (a histogram, a throughput measured once). One function per probe, in a mapped
// type over the probe kinds, so a new probe without one does not compile; a probe with request
// samples has its phases measured without one.
import { PHASES, type Phase, type RequestSample } from '../../contracts/common.js';
import type { HeaderBytesKind, QuantityId } from '../../contracts/quantities.js';
import type { OtherProbe, ProbeKind, RequestSampleProbe } from '../../contracts/probes/index.js';
import type { EncodedHistogram } from '../../contracts/probes/load.js';
import type { ProbeResult, ResultOf, Summary } from '../../contracts/result.js';
import { answeredPhase } from '../samples.js';

/** Per-request values whose p50 and p95 are compared (each with its own quantity id). */
export interface SampleMeasure {
  kind: 'samples';
  /** Pairs a measure with the other run's: "phase total", "handshake resumed". */
  key: string;
  values: number[];
  quantities: { p50: QuantityId; p95: QuantityId };
}

/** `count` of `of` requests: errors, new connections. */
export interface ShareMeasure {
  kind: 'share';
  key: QuantityId;
  count: number;
  of: number;
}

/** A value without sampling noise (bytes), or one measured once per run (throughput): no interval. */
export interface ValueMeasure {
  kind: 'exact' | 'single';
  key: QuantityId;
  value: number;
}

/** A percentile of a load job's latency histogram. */
export interface HistogramMeasure {
  kind: 'histogram';
  key: QuantityId;
  histogram: EncodedHistogram;
  percentile: number;
}

export type Measure = SampleMeasure | ShareMeasure | ValueMeasure | HistogramMeasure;

function phaseSets(samples: readonly Pick<RequestSample, 'phases' | 'error'>[], phases: readonly Phase[] = PHASES) {
  return phases.flatMap((phase): SampleMeasure[] => {
    const values = answeredPhase(samples, phase);
    return values.length === 0
      ? []
      : [
          {
            kind: 'samples',
            key: `phase ${phase}`,
            values,
            quantities: { p50: `phase_${phase}_p50`, p95: `phase_${phase}_p95` },
          },
        ];
  });
}

/** Every result has these: the share of requests that failed, and of requests that opened a connection. */
function requestShares(summary: Summary): ShareMeasure[] {
  if (summary.requests === 0) return [];
  return [
    { kind: 'share', key: 'error_rate', count: summary.errors, of: summary.requests },
    { kind: 'share', key: 'connections_per_request', count: summary.connectionsOpened, of: summary.requests },
  ];
}

const exact = (key: QuantityId, value: number): ValueMeasure => ({ kind: 'exact', key, value });

/** A probe with request samples: the percentiles of each phase. */
const requestSampleMeasures = (r: ResultOf<RequestSampleProbe>) => phaseSets(r.details?.samples ?? []);

/** Per probe; one with request samples needs an entry only to measure more than its phases. */
const MEASURES: { [K in OtherProbe]: (result: ResultOf<K>) => Measure[] } & {
  [K in RequestSampleProbe]?: (result: ResultOf<K>) => Measure[];
} = {
  compression: (r) => [
    ...phaseSets(r.details?.samples ?? []),
    ...(r.details?.encodings ?? []).flatMap((row) =>
      row.answered > 0 ? [exact(`encoded_bytes_${row.acceptEncoding}`, row.encodedBytes)] : [],
    ),
  ],
  tls: (r) => {
    const samples = r.details?.samples ?? [];
    const full = samples.filter((s) => s.kind === 'full');
    const handshake = (kind: 'full' | 'resumed', of: typeof samples): SampleMeasure[] => {
      const values = answeredPhase(of, 'tls');
      return values.length === 0
        ? []
        : [
            {
              kind: 'samples',
              key: `handshake ${kind}`,
              values,
              quantities: { p50: `handshake_${kind}_p50`, p95: `handshake_${kind}_p95` },
            },
          ];
    };
    return [
      ...phaseSets(full, ['connect']),
      ...handshake('full', full),
      ...handshake(
        'resumed',
        samples.filter((s) => s.resumed),
      ),
    ];
  },
  http2: (r) => {
    const d = r.details;
    if (!d) return [];
    const heads: [HeaderBytesKind, { request: number; response: number } | null][] = [
      ['h1', d.h1HeaderBytes],
      ['h2_first', d.h2HeaderBytesFirst],
      ['h2_repeat', d.h2HeaderBytesRepeat],
    ];
    return heads.flatMap(([kind, bytes]) =>
      bytes
        ? [exact(`header_bytes_${kind}_request`, bytes.request), exact(`header_bytes_${kind}_response`, bytes.response)]
        : [],
    );
  },
  load: (r) => {
    const d = r.details;
    if (!d || d.latencyMs.n === 0) return [];
    return [
      { kind: 'single', key: 'load_throughput', value: d.requestsPerSecond },
      { kind: 'histogram', key: 'load_latency_p50', histogram: d.latencyHistogram, percentile: 50 },
      { kind: 'histogram', key: 'load_latency_p99', histogram: d.latencyHistogram, percentile: 99 },
    ];
  },
  // Cold lookups, as the `resolve` phase: a warm job's are cache hits of a few microseconds, noise.
  dns: (r) => {
    if (r.variant.cache !== 'cold') return [];
    const values = (r.details?.samples ?? []).flatMap((s) => (s.error ? [] : [s.ms]));
    return values.length === 0
      ? []
      : [
          {
            kind: 'samples',
            key: 'phase resolve',
            values,
            quantities: { p50: 'phase_resolve_p50', p95: 'phase_resolve_p95' },
          },
        ];
  },
};

/** What a result offers for comparison, keyed so the other run's result pairs with it. */
export function measuresOf(result: ProbeResult): Map<string, Measure> {
  const measures = (MEASURES as Partial<Record<ProbeKind, (r: ProbeResult) => Measure[]>>)[result.probe];
  const own = (measures ?? (requestSampleMeasures as (r: ProbeResult) => Measure[]))(result);
  return new Map([...own, ...requestShares(result.summary)].map((m) => [m.key, m]));
}
