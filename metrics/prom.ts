// prom-client metrics made from the specs in contracts/metric-names.ts, so a name, its type,
// help, labels and buckets are written down once.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { MetricType, TypedMetricSpec } from '../contracts/metric-names.js';

/** The prom-client class of a metric type (a union of them for a union of types). */
export type MetricOf<T extends MetricType> = T extends 'counter'
  ? Counter<string>
  : T extends 'gauge'
    ? Gauge<string>
    : Histogram<string>;

/** `collect`: called by prom-client before it reads the metric (to bring it up to date). */
export function metricOf<S extends TypedMetricSpec>(
  spec: S,
  registry: Registry,
  collect?: () => void,
): MetricOf<S['type']> {
  const common = {
    name: spec.name,
    help: spec.help,
    labelNames: [...spec.labels],
    registers: [registry],
    ...(collect ? { collect } : {}),
  };
  switch (spec.type) {
    case 'counter':
      return new Counter(common) as MetricOf<S['type']>;
    // Gauges of a cumulative registry are timestamps: merged with the Pushgateway's copy, the later one wins.
    case 'gauge':
      return new Gauge({ ...common, aggregator: 'max' }) as MetricOf<S['type']>;
    case 'histogram':
      return new Histogram({ ...common, buckets: [...(spec.buckets ?? [])] }) as MetricOf<S['type']>;
  }
}

/** The metrics of a table of specs, by the table's keys, each of its spec's class. */
export function metricsOf<T extends Record<string, TypedMetricSpec>>(
  specs: T,
  registry: Registry,
  collect?: () => void,
): { [K in keyof T]: MetricOf<T[K]['type']> } {
  return Object.fromEntries(Object.entries(specs).map(([key, spec]) => [key, metricOf(spec, registry, collect)])) as {
    [K in keyof T]: MetricOf<T[K]['type']>;
  };
}
