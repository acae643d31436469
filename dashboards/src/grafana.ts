// Our layer over Grafana's foundation SDK: a dashboard is a list of panels with PromQL queries,
// and these helpers give every probefleet dashboard the same datasource, template variables,
// layout and legends. The SDK builds classic dashboard JSON (what Grafana's file provisioning
// loads).
import {
  DashboardBuilder,
  DashboardCursorSync,
  DatasourceVariableBuilder,
  CustomVariableBuilder,
  QueryVariableBuilder,
  VariableRefresh,
  VariableSort,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { PanelBuilder as BarGaugePanelBuilder } from '@grafana/grafana-foundation-sdk/bargauge';
import {
  LegendDisplayMode,
  LegendPlacement,
  ReduceDataOptionsBuilder,
  VisibilityMode,
  VizLegendOptionsBuilder,
} from '@grafana/grafana-foundation-sdk/common';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatPanelBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as TimeseriesPanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries';

/** The uid of the datasource dashboards/provisioning/datasources/ provisions; alert rules name it. */
export const DATASOURCE_UID = 'probefleet-prometheus';
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

/** The template variables a dashboard may use in its queries. */
export const VARIABLES = {
  region: '$region',
  target: '$target',
  /** The window of increase() over cumulative counters and histograms. */
  window: '$window',
  /** A target label to group by: one of the labels plans declare (targetLabels), read off probefleet_target_info. */
  label: '$label',
} as const;

/** Labels of probefleet_target_info that are not a plan's target labels. */
const NOT_TARGET_LABELS = ['plan', 'region', 'target', 'job', 'instance'];

/**
 * `<series> * on(<on>) group_left($label) max by (<on>, $label) (probefleet_target_info)`: the
 * series with the chosen target label added, for `sum by ($label)`. `on`: `plan, region, target`
 * for a run's gauges (the same group), `region, target` for a worker's series (they have no plan;
 * `max by` makes one info series per target of every plan, so plans that give a target the same
 * labels join as one).
 */
export function withTargetLabel(series: string, on: 'plan, region, target' | 'region, target'): string {
  return `${series}\n* on(${on}) group_left(${VARIABLES.label})\nmax by (${on}, ${VARIABLES.label}) (probefleet_target_info${selector({}, { target: false })})`;
}

/** `{region=~"$region", target=~"$target", ...extra}`. */
export function selector(extra: Record<string, string> = {}, { target = true } = {}): string {
  const matchers = [`region=~"${VARIABLES.region}"`, ...(target ? [`target=~"${VARIABLES.target}"`] : [])];
  for (const [label, value] of Object.entries(extra)) {
    matchers.push(/^[=!~]/.test(value) ? `${label}${value}` : `${label}="${value}"`);
  }
  return `{${matchers.join(', ')}}`;
}

export interface Query {
  expr: string;
  legend: string;
}

export interface Panel {
  title: string;
  /** What the panel answers; shown as the panel's description. */
  description: string;
  kind: 'timeseries' | 'stat' | 'bargauge';
  /** Grafana unit: s, bytes, dateTimeFromNow, percentunit, none. */
  unit: string;
  queries: Query[];
  /** Of 24 columns. @defaultValue 12 */
  width?: number;
}

export interface Dashboard {
  uid: string;
  title: string;
  description: string;
  panels: Panel[];
}

const HEIGHT = 8;

/** A template variable over a label's values: several or all may be chosen. */
function labelVariable(name: string, label: string, query: string): QueryVariableBuilder {
  return new QueryVariableBuilder(name)
    .label(label)
    .datasource(DATASOURCE)
    .query(query)
    .refresh(VariableRefresh.OnTimeRangeChanged)
    .sort(VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*')
    .current({ text: 'All', value: '$__all' });
}

/** The dashboard JSON, panels laid out left to right, top to bottom. */
export function buildDashboard(spec: Dashboard): object {
  const builder = new DashboardBuilder(spec.title)
    .uid(spec.uid)
    .description(spec.description)
    .tags(['probefleet'])
    .editable()
    .tooltip(DashboardCursorSync.Crosshair)
    .time({ from: 'now-30d', to: 'now' })
    .refresh('5m')
    .withVariable(
      new DatasourceVariableBuilder('datasource')
        .label('Prometheus')
        .type('prometheus')
        .current({ text: 'Prometheus (probefleet)', value: DATASOURCE_UID }),
    )
    .withVariable(labelVariable('region', 'Region', 'label_values(probefleet_probe_jobs_total, region)'))
    .withVariable(
      labelVariable('target', 'Target', 'label_values(probefleet_probe_jobs_total{region=~"$region"}, target)'),
    );
  // Only where a panel groups by a target label.
  if (spec.panels.some((p) => p.queries.some((q) => q.expr.includes(VARIABLES.label))))
    builder.withVariable(
      new QueryVariableBuilder('label')
        .label('Group by')
        .description(
          "A label of the plans' targets (targetLabels) to group by; none until a plan that declares one has run",
        )
        .datasource(DATASOURCE)
        .query('label_names(probefleet_target_info)')
        .regex(`/^(?!(?:${NOT_TARGET_LABELS.join('|')})$).+$/`)
        .refresh(VariableRefresh.OnTimeRangeChanged)
        .sort(VariableSort.AlphabeticalAsc),
    );
  builder.withVariable(
    new CustomVariableBuilder('window')
      .label('Window')
      .description('The window of increase() for rates and distributions: runs are nightly, so a day holds one run')
      .values('1h,6h,1d,7d')
      .current({ text: '1d', value: '1d' }),
  );

  let x = 0;
  let y = 0;
  for (const panel of spec.panels) {
    const w = panel.width ?? 12;
    if (x + w > 24) {
      x = 0;
      y += HEIGHT;
    }
    builder.withPanel(panelBuilder(panel).gridPos({ x, y, w, h: HEIGHT }));
    x += w;
  }
  return builder.build();
}

function panelBuilder(panel: Panel) {
  const targets = panel.queries.map((q, i) => {
    const query = new DataqueryBuilder()
      .expr(q.expr)
      .legendFormat(q.legend)
      .refId(String.fromCharCode(65 + i));
    return panel.kind === 'timeseries' ? query.range() : query.instant();
  });
  const legend = new VizLegendOptionsBuilder()
    .showLegend(true)
    .displayMode(LegendDisplayMode.Table)
    .placement(LegendPlacement.Bottom)
    .calcs(['lastNotNull', 'max']);
  const lastValue = new ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false);
  const common = <B extends TimeseriesPanelBuilder | StatPanelBuilder | BarGaugePanelBuilder>(b: B): B => {
    b.title(panel.title).description(panel.description).datasource(DATASOURCE).unit(panel.unit);
    for (const target of targets) b.withTarget(target);
    return b;
  };
  switch (panel.kind) {
    case 'timeseries':
      return common(new TimeseriesPanelBuilder())
        .legend(legend)
        .spanNulls(false)
        .showPoints(VisibilityMode.Always)
        .pointSize(5);
    case 'stat':
      return common(new StatPanelBuilder()).reduceOptions(lastValue);
    case 'bargauge':
      return common(new BarGaugePanelBuilder()).reduceOptions(lastValue);
  }
}
