// prom-client metrics made from the specs in contracts/metric-names.ts, so a name, its type,
// help, labels and buckets are written down once.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { TypedMetricSpec } from '../contracts/metric-names.js';

export type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;

export function metricOf(spec: TypedMetricSpec, registry: Registry): AnyMetric {
  const common = { name: spec.name, help: spec.help, labelNames: [...spec.labels], registers: [registry] };
  switch (spec.type) {
    case 'counter':
      return new Counter(common);
    // Gauges of a cumulative registry are timestamps: merged with the Pushgateway's copy, the later one wins.
    case 'gauge':
      return new Gauge({ ...common, aggregator: 'max' });
    case 'histogram':
      return new Histogram({ ...common, buckets: [...(spec.buckets ?? [])] });
  }
}

/** The metrics of a table of specs, by the table's keys. */
export function metricsOf<K extends string>(
  specs: Record<K, TypedMetricSpec>,
  registry: Registry,
): Record<K, AnyMetric> {
  return Object.fromEntries(
    Object.entries<TypedMetricSpec>(specs).map(([key, spec]) => [key, metricOf(spec, registry)]),
  ) as Record<K, AnyMetric>;
}
