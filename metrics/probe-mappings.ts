// What each probe's results become as metrics: one entry per probe, for the cumulative series
// of every job (`job`) and the last-run gauges of a run (`run`); a probe with request samples
// needs one only to add to the request metrics (mappingOf). Names, labels and buckets are in
// contracts/metric-names.ts (PROBE_METRICS says which metrics and labels each probe has); the
// registries and pushing are elsewhere in this folder. Probes never touch prom-client.
import { PHASES, type RequestSample } from '../contracts/common.js';
import type { CODE_CLASSES, ProbeJobMetric, RunMetric } from '../contracts/metric-names.js';
import type { OtherProbe, ProbeKind, RequestSampleProbe } from '../contracts/probes/index.js';
import type { ResultOf, RunReport } from '../contracts/result.js';

export type Labels = Record<string, string>;

/** Records into the cumulative registry of the process that ran the job. */
export interface JobRecorder {
  /** Adds to a counter. */
  add(metric: ProbeJobMetric, labels: Labels, value?: number): void;
  /** Sets a gauge. */
  set(metric: ProbeJobMetric, labels: Labels, value: number): void;
  /** Observes a histogram, in seconds. */
  observe(metric: ProbeJobMetric, labels: Labels, seconds: number): void;
}

/** Sets a gauge of a region's last-run group. */
export type RunRecorder = (metric: RunMetric, labels: Labels, value: number) => void;

export interface ProbeMetricMapping<K extends ProbeKind> {
  /** Called for every result as the job finishes, besides the series every probe has. */
  job(result: ResultOf<K>, record: JobRecorder): void;
  /** Called per region of a finished run with that probe's results there, one call per page of
   * results for a big run: a mapping sets gauges per result, or from the report's head. */
  run(
    results: ResultOf<K>[],
    record: RunRecorder,
    context: { report: Omit<RunReport, 'results'>; region: string },
  ): void;
}

const seconds = (ms: number) => ms / 1000;

function codeClass(sample: RequestSample): (typeof CODE_CLASSES)[number] {
  if (sample.error || sample.status === undefined) return 'error';
  const hundreds = Math.floor(sample.status / 100);
  return hundreds >= 1 && hundreds <= 5 ? (`${hundreds}xx` as (typeof CODE_CLASSES)[number]) : 'error';
}

/** Requests, their phases and the connections they opened; `mode` for probes whose jobs differ by
 * mode, `client` for the drain probe's clients. */
function recordRequests(result: ResultOf<RequestSampleProbe>, record: JobRecorder): void {
  const { target, probe } = result;
  const samples: readonly RequestSample[] = result.details?.samples ?? [];
  const { mode, client } = result.variant as { mode?: string; client?: string };
  // Object.assign, not object spread: on Node 20 a spread of these labels cost ~2.5 µs, most of
  // a one-request job's metrics (bench/README.md, "Per job").
  const labels = (extra?: Labels): Labels =>
    Object.assign(
      mode === undefined
        ? { target, probe }
        : client === undefined
          ? { target, probe, mode }
          : { target, probe, mode, client },
      extra,
    );
  record.add('connectionsOpened', labels(), result.summary.connectionsOpened);
  // prom-client validates and hashes the labels of every call: requests are counted per class first.
  const requests = new Map<string, number>();
  for (const sample of samples) {
    const code = codeClass(sample);
    requests.set(code, (requests.get(code) ?? 0) + 1);
    // A failed request's phases stop wherever it failed; like the summary, only answered ones count.
    if (sample.error) continue;
    const connection = sample.newConnection ? 'new' : 'reused';
    for (const phase of PHASES) {
      const ms = sample.phases[phase];
      if (ms !== undefined) record.observe('requestPhase', labels({ connection, phase }), seconds(ms));
    }
  }
  for (const [code_class, count] of requests) record.add('requests', labels({ code_class }), count);
}

const nothingPerRun = () => {};

/** A probe with request samples: its requests, their phases and connections, nothing per run. */
const REQUEST_SAMPLE_MAPPING: ProbeMetricMapping<RequestSampleProbe> = { job: recordRequests, run: nothingPerRun };

/** The mapping of a probe's results to metrics: its entry, else the request metrics. */
export function mappingOf<K extends ProbeKind>(kind: K): ProbeMetricMapping<K> {
  return ((PROBE_METRIC_MAPPINGS as Partial<Record<ProbeKind, unknown>>)[kind] ??
    REQUEST_SAMPLE_MAPPING) as ProbeMetricMapping<K>;
}

const PROBE_METRIC_MAPPINGS: { [K in OtherProbe]: ProbeMetricMapping<K> } & {
  [K in RequestSampleProbe]?: ProbeMetricMapping<K>;
} = {
  reuse: {
    job: recordRequests,
    run: (_results, record, { report, region }) => {
      for (const c of report.comparisons) {
        // No cost to show (reused requests stall, or the server closes every connection): no
        // series, so a dashboard never charts a negative "cost"; the finding says why.
        if (c.region !== region || c.noCostReason) continue;
        const labels = { target: c.target, scheme: c.scheme };
        record('newConnectionCost', labels, seconds(c.newConnectionCostMs.median));
        record('newConnectionCostLower', labels, seconds(c.newConnectionCostMs.ci95[0]));
        record('newConnectionCostUpper', labels, seconds(c.newConnectionCostMs.ci95[1]));
        if (c.newConnectionCostTailMs) {
          record('newConnectionCostTail', { ...labels, quantile: '0.95' }, seconds(c.newConnectionCostTailMs.p95));
          record('newConnectionCostTail', { ...labels, quantile: '0.99' }, seconds(c.newConnectionCostTailMs.p99));
        }
      }
    },
  },
  compression: {
    job: recordRequests,
    run: (results, record) => {
      for (const result of results) {
        for (const row of result.details?.encodings ?? []) {
          if (row.answered === 0) continue;
          const labels = { target: result.target, encoding: row.acceptEncoding };
          record('responseBytes', { ...labels, layer: 'body' }, row.encodedBytes);
          if (row.wireBytes !== undefined) record('responseBytes', { ...labels, layer: 'wire' }, row.wireBytes);
          if (row.decodedBytes !== undefined)
            record('responseBytes', { ...labels, layer: 'decoded' }, row.decodedBytes);
          if (row.decodeMs !== undefined) record('decodeDuration', labels, seconds(row.decodeMs));
        }
      }
    },
  },
  tls: {
    job: (result, record) => {
      record.add('connectionsOpened', { target: result.target, probe: result.probe }, result.summary.connectionsOpened);
      for (const sample of result.details?.samples ?? []) {
        if (sample.error || sample.phases.tls === undefined) continue;
        const labels = {
          target: result.target,
          tls_version: result.variant.version,
          handshake: sample.resumed ? 'resumed' : 'full',
        };
        record.observe('tlsHandshake', labels, seconds(sample.phases.tls));
      }
    },
    run: (results, record) => {
      for (const result of results) {
        const details = result.details;
        if (!details) continue;
        const base = { target: result.target, tls_version: result.variant.version };
        for (const [handshake, stats] of [
          ['full', details.handshakeMs],
          ['resumed', details.resumedHandshakeMs],
        ] as const) {
          if (!stats) continue;
          record('tlsHandshake', { ...base, handshake, quantile: '0.5' }, seconds(stats.p50));
          record('tlsHandshake', { ...base, handshake, quantile: '0.95' }, seconds(stats.p95));
          if (stats.p99 !== undefined)
            record('tlsHandshake', { ...base, handshake, quantile: '0.99' }, seconds(stats.p99));
        }
        if (details.certNotAfter)
          record('certExpiry', { target: result.target }, Date.parse(details.certNotAfter) / 1000);
      }
    },
  },
  http2: {
    job: (result, record) =>
      record.add('connectionsOpened', { target: result.target, probe: result.probe }, result.summary.connectionsOpened),
    run: (results, record) => {
      for (const result of results) {
        const details = result.details;
        if (!details) continue;
        const heads = [
          ['http/1.1', 'first', details.h1HeaderBytes],
          ['h2', 'first', details.h2HeaderBytesFirst],
          ['h2', 'repeat', details.h2HeaderBytesRepeat],
        ] as const;
        for (const [protocol, request, bytes] of heads) {
          if (!bytes) continue;
          record('headerBytes', { target: result.target, protocol, request, message: 'request' }, bytes.request);
          record('headerBytes', { target: result.target, protocol, request, message: 'response' }, bytes.response);
        }
        for (const [protocol, run] of [
          ['http/1.1', details.multiplexing.h1],
          ['h2', details.multiplexing.h2],
        ] as const) {
          if (!run) continue;
          record('multiplexDuration', { target: result.target, protocol }, seconds(run.totalMs));
          record('multiplexConnections', { target: result.target, protocol }, run.connectionsOpened);
        }
      }
    },
  },
  load: {
    // Per-request series would cost the load loop; the job's own counts say the same.
    job: (result, record) => {
      const base = { target: result.target, probe: result.probe, mode: result.variant.mode };
      record.add('connectionsOpened', base, result.summary.connectionsOpened);
      for (const [codeClass, count] of Object.entries(result.details?.statuses ?? {}))
        record.add('requests', { ...base, code_class: codeClass }, count);
      if (result.summary.errors > 0) record.add('requests', { ...base, code_class: 'error' }, result.summary.errors);
    },
    run: (results, record) => {
      for (const result of results) {
        const details = result.details;
        if (!details) continue;
        const labels = { target: result.target, mode: result.variant.mode, loop: result.variant.loop };
        record('loadThroughput', labels, details.requestsPerSecond);
        record('loadClientUtilization', labels, Math.max(...details.client.eventLoopUtilization));
        if (details.latencyMs.n === 0) continue;
        for (const [quantile, ms] of [
          ['0.5', details.latencyMs.p50],
          ['0.9', details.latencyMs.p90],
          ['0.99', details.latencyMs.p99],
          ['0.999', details.latencyMs.p999],
        ] as const) {
          record('loadLatency', { ...labels, quantile }, seconds(ms));
        }
      }
    },
  },
  dns: {
    // Every answered lookup, warm cache hits included: the histogram shows what the client paid.
    job: (result, record) => {
      const labels = {
        target: result.target,
        resolver: result.variant.resolver,
        record_type: result.variant.recordType,
        cache: result.variant.cache,
      };
      for (const sample of result.details?.samples ?? [])
        if (!sample.error) record.observe('dnsLookup', labels, seconds(sample.ms));
    },
    run: nothingPerRun,
  },
};
