// The alerts, written once and rendered twice: as a Prometheus rule file
// (dashboards/alerts/probefleet.rules.yml, checked with promtool) and as Grafana-managed alert
// rules for file provisioning (dashboards/provisioning/alerting/). Every alert is "a value
// expression compared with a threshold", which both systems express the same way.
//
// They read the last-run gauges, which hold their value between nightly runs, so an alert
// raised by last night's run stays up until a run says otherwise.
import { QueryBuilder as AlertQueryBuilder, RuleBuilder } from '@grafana/grafana-foundation-sdk/alerting';
import { TypeThresholdBuilder } from '@grafana/grafana-foundation-sdk/expr';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { DATASOURCE_UID } from './grafana.js';
import { ALERT_DEFAULTS, type AlertSettings } from '../../contracts/thresholds.js';

export interface AlertSpec {
  /** Prometheus alert name; also the Grafana rule's title unless `title` says otherwise. */
  name: string;
  /** The Grafana rule's title, where one alert name has a rule per plan or threshold (titles are unique). */
  title?: string;
  /** Labels beyond `severity`: the plan and threshold a generated alert is about. */
  labels?: Record<string, string>;
  /** Grafana rule uid (at most 40 characters). */
  uid: string;
  /** The value the threshold applies to; its labels say where. */
  query: string;
  op: '>' | '<';
  threshold: number;
  for: string;
  severity: 'warning' | 'critical';
  summary: string;
  /** The description, given the templating of the value in each system. */
  describe(value: { seconds: string; number: string; ratio: string }): string;
}

/** Which plans an alert covers: `matcher` goes into every selector (`plan="nightly", `), `by`
 * into every aggregation, so each alert names its plan; both empty for every plan at once. */
export interface AlertScope {
  matcher: string;
  by: string;
  /** Added to Grafana titles and uids, which must be unique across the rule files. */
  suffix: string;
}
export const EVERY_PLAN: AlertScope = { matcher: '', by: '', suffix: '' };

/** A selector with the scope's matcher: `{plan="nightly", handshake="full"}`, or none at all. */
const select = (scope: AlertScope, rest = '') => {
  const inner = `${scope.matcher}${rest}`.replace(/, $/, '');
  return inner ? `{${inner}}` : '';
};

/** The alerts with their thresholds: ALERT_DEFAULTS unless a plan set its own (`probefleet alerts PLAN`). */
export function alertSpecs(settings: AlertSettings = ALERT_DEFAULTS, scope: AlertScope = EVERY_PLAN): AlertSpec[] {
  const { by } = scope;
  const handshakeP95Seconds = settings.handshakeP95Ms / 1000;
  const regressionMinSeconds = settings.handshakeRegressionMinMs / 1000;
  const lastRunMedianHandshake = `max by (${by}region, target, tls_version) (probefleet_last_run_tls_handshake_seconds${select(scope, 'handshake="full", quantile="0.5"')})`;
  /** The median handshake averaged over the 7 days before the last day: the region's own baseline. */
  const baselineMedianHandshake = `max by (${by}region, target, tls_version) (avg_over_time(probefleet_last_run_tls_handshake_seconds${select(scope, 'handshake="full", quantile="0.5"')}[7d] offset 1d))`;
  const specs: AlertSpec[] = [
    {
      name: 'ProbefleetTlsHandshakeSlow',
      uid: 'probefleet-tls-handshake-slow',
      query: `max by (${by}region, target) (probefleet_last_run_tls_handshake_seconds${select(scope, 'handshake="full", quantile="0.95"')})`,
      op: '>',
      threshold: handshakeP95Seconds,
      for: '15m',
      severity: 'warning',
      summary: 'Slow TLS handshakes from {{ $labels.region }} to {{ $labels.target }}',
      describe: (v) =>
        `The p95 of full TLS handshakes from {{ $labels.region }} to {{ $labels.target }} was ${v.seconds} in the last run ` +
        `(threshold ${settings.handshakeP95Ms} ms). Dashboard: probefleet / Regional connection cost.`,
    },
    {
      name: 'ProbefleetTlsHandshakeRegression',
      uid: 'probefleet-tls-handshake-regression',
      query: `(\n  ${lastRunMedianHandshake}\n  /\n  ${baselineMedianHandshake}\n)\nand on (${by}region, target, tls_version)\n(\n  ${lastRunMedianHandshake}\n  - ${baselineMedianHandshake}\n  > ${regressionMinSeconds}\n)`,
      op: '>',
      threshold: settings.handshakeRegressionRatio,
      for: '1h',
      severity: 'warning',
      summary: 'TLS handshakes from {{ $labels.region }} to {{ $labels.target }} got slower than their 7-day baseline',
      describe: (v) =>
        `The median full TLS ${'{{ $labels.tls_version }}'} handshake from {{ $labels.region }} to {{ $labels.target }} in the last run is ${v.number} times ` +
        `its average over the 7 days before (alert above ${settings.handshakeRegressionRatio}x and ${settings.handshakeRegressionMinMs} ms slower).`,
    },
    {
      name: 'ProbefleetRegressedBeyondBaseline',
      uid: 'probefleet-regressed-beyond-baseline',
      query: `max by (plan, region, target, probe, variant, quantity) (probefleet_comparison_verdict${select(scope, 'verdict="regressed"')})`,
      op: '>',
      threshold: 0,
      for: '10m',
      severity: 'warning',
      summary:
        '{{ $labels.quantity }} of {{ $labels.probe }} {{ $labels.variant }} to {{ $labels.target }} from {{ $labels.region }} regressed beyond its baseline',
      describe: () =>
        'The last run of plan {{ $labels.plan }} against its earlier runs: {{ $labels.quantity }} lies beyond their ' +
        'night-to-night spread and moved at least its minimum effect, in the worse direction (docs/compare.md). ' +
        'What changed: probefleet compare --redis --previous.',
    },
    {
      name: 'ProbefleetNightlyRunMissing',
      uid: 'probefleet-nightly-run-missing',
      query: `time() - max by (${by}region) (probefleet_last_run_timestamp_seconds${select(scope)})`,
      op: '>',
      threshold: settings.runMissingHours * 3600,
      for: '10m',
      severity: 'warning',
      summary: `No probefleet run with results from {{ $labels.region }} for over ${settings.runMissingHours} hours`,
      describe: (v) =>
        `The last run with results from {{ $labels.region }} finished ${v.seconds} ago. Are the region's workers up (probefleet / Fleet), ` +
        'is the schedule there (probefleet schedule list), does the coordinator push to the Pushgateway?',
    },
    {
      name: 'ProbefleetProbeFailureRatio',
      uid: 'probefleet-probe-failure-ratio',
      query: `sum by (${by}region, probe) (probefleet_last_run_jobs${select(scope, 'outcome!="ok"')})\n/\nsum by (${by}region, probe) (probefleet_last_run_jobs${select(scope)})`,
      op: '>',
      threshold: settings.failureRatio,
      for: '15m',
      severity: 'warning',
      summary: 'Many {{ $labels.probe }} jobs in {{ $labels.region }} failed in the last run',
      describe: (v) =>
        `${v.ratio} of the ${'{{ $labels.probe }}'} jobs in {{ $labels.region }} ended without a clean result in the last run ` +
        `(threshold ${settings.failureRatio * 100}%): the target failed, the job failed, or no worker took it. The run report says which (probefleet runs list).`,
    },
    {
      name: 'ProbefleetCertificateExpiringSoon',
      uid: 'probefleet-certificate-expiring-soon',
      query: `min by (${by}target) (probefleet_tls_cert_expiry_timestamp_seconds${select(scope)}) - time()`,
      op: '<',
      threshold: settings.certificateExpiryDays * 86400,
      for: '1h',
      severity: 'warning',
      summary: `The certificate of {{ $labels.target }} expires within ${settings.certificateExpiryDays} days`,
      describe: (v) =>
        `The certificate the tls probe saw on {{ $labels.target }} expires in ${v.seconds} (negative: it has expired). Renew it.`,
    },
  ];
  return scope.suffix
    ? specs.map((a) => ({ ...a, uid: `${a.uid.replace('probefleet-', 'pf-')}-${scope.suffix}` }))
    : specs;
}

/** The alerts for every plan, at their defaults: dashboards/alerts/probefleet.rules.yml. */
export const ALERTS: readonly AlertSpec[] = alertSpecs();

export const RULE_GROUP = 'probefleet';

/** A named list of alerts: one rule group. */
export interface AlertGroup {
  name: string;
  alerts: readonly AlertSpec[];
}
const DEFAULT_GROUPS: AlertGroup[] = [{ name: RULE_GROUP, alerts: ALERTS }];

/** The Prometheus rule file. */
export function prometheusRules(groups: AlertGroup[] = DEFAULT_GROUPS): object {
  return {
    groups: groups.map((group) => ({
      name: group.name,
      interval: '1m',
      rules: group.alerts.map((a) => ({
        alert: a.name,
        // Parenthesised: `and`, `/` and `-` inside the query bind looser or tighter than the comparison.
        expr: `(\n  ${a.query.replaceAll('\n', '\n  ')}\n)\n${a.op} ${a.threshold}\n`,
        for: a.for,
        labels: { severity: a.severity, ...a.labels },
        annotations: {
          summary: a.summary,
          description: a.describe({
            seconds: '{{ $value | humanizeDuration }}',
            number: '{{ $value | humanize }}',
            ratio: '{{ $value | humanizePercentage }}',
          }),
        },
      })),
    })),
  };
}

/** Grafana-managed alert rules in the file-provisioning format (apiVersion 1). */
export function grafanaAlertRules(groups: AlertGroup[] = DEFAULT_GROUPS): object {
  return {
    apiVersion: 1,
    groups: groups.map((group) => ({
      orgId: 1,
      name: group.name,
      folder: 'probefleet',
      interval: '1m',
      rules: group.alerts.map(grafanaRule),
    })),
  };
}

function grafanaRule(a: AlertSpec): object {
  const rule = new RuleBuilder(a.title ?? a.name)
    .uid(a.uid)
    .condition('B')
    .withQuery(
      new AlertQueryBuilder('A')
        .datasourceUid(DATASOURCE_UID)
        .relativeTimeRange({ from: 600, to: 0 })
        .model(new DataqueryBuilder().expr(a.query).instant().refId('A')),
    )
    .withQuery(
      new AlertQueryBuilder('B').datasourceUid('__expr__').model(
        new TypeThresholdBuilder()
          .expression('A')
          .refId('B')
          .conditions([{ evaluator: { type: a.op === '>' ? 'gt' : 'lt', params: [a.threshold] } }]),
      ),
    )
    .forDuration(a.for)
    .noDataState('OK')
    .execErrState('Error')
    .labels({ severity: a.severity, ...a.labels })
    .annotations({
      summary: a.summary,
      description: a.describe({
        seconds: '{{ humanizeDuration $values.A.Value }}',
        number: '{{ humanize $values.A.Value }}',
        ratio: '{{ humanizePercentage $values.A.Value }}',
      }),
    })
    .build();
  // File provisioning takes the rule without the API's placement fields (folder, group, org).
  const { uid, title, condition, data, for: forDuration, noDataState, execErrState, labels, annotations } = rule;
  return {
    uid,
    title,
    condition,
    data,
    for: forDuration,
    noDataState,
    execErrState,
    labels,
    annotations,
    isPaused: false,
  };
}
