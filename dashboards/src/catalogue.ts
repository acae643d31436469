// The metric catalogue (dashboards/metric-catalogue.json): every metric probefleet exports, its
// type, help and labels as Prometheus stores them, where it comes from, and which probes' results
// produce it with which labels. Generated from contracts/metric-names.ts; tests check it against
// what a real run of every probe emits and against every dashboard and alert query.
import {
  COMMON_PROBE_METRICS,
  COMPARISON_METRICS,
  COORDINATOR_METRICS,
  LABEL_VALUES,
  PROBE_JOB_METRICS,
  probeMetricsOf,
  PUSH_GROUPS,
  PUSH_METRICS,
  REDIS_METRICS,
  RUN_METRICS,
  TARGET_INFO_METRIC,
  WORKER_METRICS,
  type TypedMetricSpec,
} from '../../contracts/metric-names.js';
import { PROBE_KINDS } from '../../contracts/probes/index.js';

export const CATALOGUE_SCHEMA = 'probefleet.metric-catalogue/v1';

/** How a series reaches Prometheus. */
export const SOURCES = {
  'push:probes': `pushed by every process that runs jobs (worker, run in embedded mode), group {job="${PUSH_GROUPS.probes.job}", ${PUSH_GROUPS.probes.key.join(', ')}}, cumulative`,
  'push:run': `pushed by whoever finishes a run (coordinator, run), group {job="${PUSH_GROUPS.run.job}", ${PUSH_GROUPS.run.key.join(', ')}}, replaced by the next run`,
  'push:compare': `pushed by the coordinator when it compares a run with the previous run of its plan, group {job="${PUSH_GROUPS.compare.job}", ${PUSH_GROUPS.compare.key.join(', ')}}, replaced by the next comparison`,
  'scrape:worker': '/metrics of probefleet worker --metrics-port, with prom-client process_* and nodejs_* metrics',
  'scrape:coordinator': '/metrics of probefleet coordinator, with prom-client process_* and nodejs_* metrics',
  'scrape:worker,coordinator': `/metrics of the worker and of the coordinator; the push failures also pushed by \`probefleet run\` (which serves no /metrics) in group {job="${PUSH_GROUPS.cli.job}", ${PUSH_GROUPS.cli.key.join(', ')}}, cumulative`,
} as const;
export type Source = keyof typeof SOURCES;

export interface CatalogueMetric {
  name: string;
  type: TypedMetricSpec['type'];
  help: string;
  source: Source;
  /** Labels as Prometheus stores them (pushed group labels included; `job` and scrape `instance` left out). */
  labels: string[];
  buckets?: number[];
  /** Pushed metrics: the probes whose results produce it. */
  probes?: string[];
  /** Labels it carries besides `labels`, which each plan names (probefleet_target_info: the plan's targetLabels). */
  planLabels?: string;
}

export interface Catalogue {
  schema: typeof CATALOGUE_SCHEMA;
  sources: typeof SOURCES;
  labels: typeof LABEL_VALUES;
  metrics: CatalogueMetric[];
  /** Per probe: each metric its results produce, with its labels. */
  probes: Record<string, Record<string, string[]>>;
}

const sorted = (labels: readonly string[]) => [...labels].sort();

export function buildCatalogue(): Catalogue {
  const probes: Catalogue['probes'] = {};
  const producedBy = new Map<string, string[]>();
  for (const probe of PROBE_KINDS) {
    const entry: Record<string, string[]> = {};
    const add = (spec: TypedMetricSpec, labels: readonly string[], group: readonly string[]) => {
      entry[spec.name] = sorted([...labels, ...group]);
      producedBy.set(spec.name, [...(producedBy.get(spec.name) ?? []), probe]);
    };
    for (const key of COMMON_PROBE_METRICS.job)
      add(PROBE_JOB_METRICS[key], PROBE_JOB_METRICS[key].labels, PUSH_GROUPS.probes.key);
    for (const [key, labels] of Object.entries(probeMetricsOf(probe).job)) {
      add(
        PROBE_JOB_METRICS[key as keyof typeof PROBE_JOB_METRICS],
        labels as readonly string[],
        PUSH_GROUPS.probes.key,
      );
    }
    for (const key of COMMON_PROBE_METRICS.run) add(RUN_METRICS[key], RUN_METRICS[key].labels, PUSH_GROUPS.run.key);
    for (const [key, labels] of Object.entries(probeMetricsOf(probe).run)) {
      add(RUN_METRICS[key as keyof typeof RUN_METRICS], labels as readonly string[], PUSH_GROUPS.run.key);
    }
    probes[probe] = Object.fromEntries(Object.entries(entry).sort(([a], [b]) => a.localeCompare(b)));
  }

  const metric = (spec: TypedMetricSpec, source: Source, group: readonly string[] = []): CatalogueMetric => ({
    name: spec.name,
    type: spec.type,
    help: spec.help,
    source,
    labels: sorted([...spec.labels, ...group]),
    ...(spec.buckets ? { buckets: [...spec.buckets] } : {}),
    ...(producedBy.has(spec.name) ? { probes: producedBy.get(spec.name) } : {}),
  });
  const metrics = [
    ...Object.values<TypedMetricSpec>(PROBE_JOB_METRICS).map((s) => metric(s, 'push:probes', PUSH_GROUPS.probes.key)),
    ...Object.values<TypedMetricSpec>(RUN_METRICS).map((s) => metric(s, 'push:run', PUSH_GROUPS.run.key)),
    {
      ...metric(TARGET_INFO_METRIC, 'push:run', PUSH_GROUPS.run.key),
      planLabels:
        "the plan's targetLabels (docs/plan.md, Targets from files); pushed only for a plan that declares them",
    },
    ...Object.values<TypedMetricSpec>(COMPARISON_METRICS).map((s) =>
      metric(s, 'push:compare', PUSH_GROUPS.compare.key),
    ),
    ...Object.values<TypedMetricSpec>(WORKER_METRICS).map((s) => metric(s, 'scrape:worker')),
    ...Object.values<TypedMetricSpec>(PUSH_METRICS).map((s) => metric(s, 'scrape:worker,coordinator')),
    ...Object.values<TypedMetricSpec>(REDIS_METRICS).map((s) => metric(s, 'scrape:worker,coordinator')),
    ...Object.values<TypedMetricSpec>(COORDINATOR_METRICS).map((s) => metric(s, 'scrape:coordinator')),
  ];
  return { schema: CATALOGUE_SCHEMA, sources: SOURCES, labels: LABEL_VALUES, metrics, probes };
}
