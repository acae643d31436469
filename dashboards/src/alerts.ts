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

export interface AlertSpec {
  /** Prometheus alert name; also the Grafana rule's title. */
  name: string;
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

/** Thresholds, in base units. Change them here, then `npm run dashboards`. */
export const THRESHOLDS = {
  /** p95 of full TLS handshakes in a region's last run. */
  handshakeP95Seconds: 0.5,
  /** Median handshake over the region's own median of the 7 days before the last one... */
  handshakeRegressionRatio: 1.5,
  /** ...and at least this much slower, so that loopback-sized noise never pages anyone. */
  handshakeRegressionMinSeconds: 0.02,
  /** No run with results from a region for this long: a nightly run went missing. */
  runMissingSeconds: 26 * 3600,
  /** Share of a probe's jobs in a region's last run without a clean result. */
  failureRatio: 0.2,
  /** Days before a certificate's notAfter (the tls probe's CERT_EXPIRES_SOON default). */
  certExpirySeconds: 21 * 86400,
} as const;

const lastRunMedianHandshake =
  'max by (region, target, tls_version) (probefleet_last_run_tls_handshake_seconds{handshake="full", quantile="0.5"})';
/** The median handshake averaged over the 7 days before the last day: the region's own baseline. */
const baselineMedianHandshake =
  'max by (region, target, tls_version) (avg_over_time(probefleet_last_run_tls_handshake_seconds{handshake="full", quantile="0.5"}[7d] offset 1d))';

export const ALERTS: readonly AlertSpec[] = [
  {
    name: 'ProbefleetTlsHandshakeSlow',
    uid: 'probefleet-tls-handshake-slow',
    query: 'max by (region, target) (probefleet_last_run_tls_handshake_seconds{handshake="full", quantile="0.95"})',
    op: '>',
    threshold: THRESHOLDS.handshakeP95Seconds,
    for: '15m',
    severity: 'warning',
    summary: 'Slow TLS handshakes from {{ $labels.region }} to {{ $labels.target }}',
    describe: (v) =>
      `The p95 of full TLS handshakes from {{ $labels.region }} to {{ $labels.target }} was ${v.seconds} in the last run ` +
      `(threshold ${THRESHOLDS.handshakeP95Seconds * 1000} ms). Dashboard: probefleet / Regional connection cost.`,
  },
  {
    name: 'ProbefleetTlsHandshakeRegression',
    uid: 'probefleet-tls-handshake-regression',
    query: `(\n  ${lastRunMedianHandshake}\n  /\n  ${baselineMedianHandshake}\n)\nand on (region, target, tls_version)\n(\n  ${lastRunMedianHandshake}\n  - ${baselineMedianHandshake}\n  > ${THRESHOLDS.handshakeRegressionMinSeconds}\n)`,
    op: '>',
    threshold: THRESHOLDS.handshakeRegressionRatio,
    for: '1h',
    severity: 'warning',
    summary: 'TLS handshakes from {{ $labels.region }} to {{ $labels.target }} got slower than their 7-day baseline',
    describe: (v) =>
      `The median full TLS ${'{{ $labels.tls_version }}'} handshake from {{ $labels.region }} to {{ $labels.target }} in the last run is ${v.number} times ` +
      `its average over the 7 days before (alert above ${THRESHOLDS.handshakeRegressionRatio}x and ${THRESHOLDS.handshakeRegressionMinSeconds * 1000} ms slower).`,
  },
  {
    name: 'ProbefleetRegressedWithConfidence',
    uid: 'probefleet-regressed-with-confidence',
    query:
      'max by (plan, region, target, probe, variant, quantity) (probefleet_comparison_verdict{verdict="regressed"})',
    op: '>',
    threshold: 0,
    for: '10m',
    severity: 'warning',
    summary:
      '{{ $labels.quantity }} of {{ $labels.probe }} {{ $labels.variant }} to {{ $labels.target }} from {{ $labels.region }} regressed since the previous run',
    describe: () =>
      'The last run of plan {{ $labels.plan }} against the run before it: the whole 95% interval of the change of ' +
      '{{ $labels.quantity }} lies beyond its minimum change, in the worse direction (docs/compare.md). ' +
      'What changed: probefleet compare --redis --previous.',
  },
  {
    name: 'ProbefleetNightlyRunMissing',
    uid: 'probefleet-nightly-run-missing',
    query: 'time() - max by (region) (probefleet_last_run_timestamp_seconds)',
    op: '>',
    threshold: THRESHOLDS.runMissingSeconds,
    for: '10m',
    severity: 'warning',
    summary: 'No probefleet run with results from {{ $labels.region }} for over 26 hours',
    describe: (v) =>
      `The last run with results from {{ $labels.region }} finished ${v.seconds} ago. Are the region's workers up (probefleet / Fleet), ` +
      'is the schedule there (probefleet schedule list), does the coordinator push to the Pushgateway?',
  },
  {
    name: 'ProbefleetProbeFailureRatio',
    uid: 'probefleet-probe-failure-ratio',
    query:
      'sum by (region, probe) (probefleet_last_run_jobs{outcome!="ok"})\n/\nsum by (region, probe) (probefleet_last_run_jobs)',
    op: '>',
    threshold: THRESHOLDS.failureRatio,
    for: '15m',
    severity: 'warning',
    summary: 'Many {{ $labels.probe }} jobs in {{ $labels.region }} failed in the last run',
    describe: (v) =>
      `${v.ratio} of the ${'{{ $labels.probe }}'} jobs in {{ $labels.region }} ended without a clean result in the last run ` +
      `(threshold ${THRESHOLDS.failureRatio * 100}%): the target failed, the job failed, or no worker took it. The run report says which (probefleet runs list).`,
  },
  {
    name: 'ProbefleetCertificateExpiringSoon',
    uid: 'probefleet-certificate-expiring-soon',
    query: 'min by (target) (probefleet_tls_cert_expiry_timestamp_seconds) - time()',
    op: '<',
    threshold: THRESHOLDS.certExpirySeconds,
    for: '1h',
    severity: 'warning',
    summary: 'The certificate of {{ $labels.target }} expires within 21 days',
    describe: (v) =>
      `The certificate the tls probe saw on {{ $labels.target }} expires in ${v.seconds} (negative: it has expired). Renew it.`,
  },
];

export const RULE_GROUP = 'probefleet';

/** The Prometheus rule file. */
export function prometheusRules(): object {
  return {
    groups: [
      {
        name: RULE_GROUP,
        interval: '1m',
        rules: ALERTS.map((a) => ({
          alert: a.name,
          // Parenthesised: `and`, `/` and `-` inside the query bind looser or tighter than the comparison.
          expr: `(\n  ${a.query.replaceAll('\n', '\n  ')}\n)\n${a.op} ${a.threshold}\n`,
          for: a.for,
          labels: { severity: a.severity },
          annotations: {
            summary: a.summary,
            description: a.describe({
              seconds: '{{ $value | humanizeDuration }}',
              number: '{{ $value | humanize }}',
              ratio: '{{ $value | humanizePercentage }}',
            }),
          },
        })),
      },
    ],
  };
}

/** Grafana-managed alert rules in the file-provisioning format (apiVersion 1). */
export function grafanaAlertRules(): object {
  const rules = ALERTS.map((a) => {
    const rule = new RuleBuilder(a.name)
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
      .labels({ severity: a.severity })
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
  });
  return { apiVersion: 1, groups: [{ orgId: 1, name: RULE_GROUP, folder: 'probefleet', interval: '1m', rules }] };
}
