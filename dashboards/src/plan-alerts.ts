// `probefleet alerts PLAN...`: alert rules from plans. Per plan, one rule group: the fixed alerts
// at the plan's own values (`alerts:` in the plan, else ALERT_DEFAULTS) and its baseline rule,
// scoped to the plan, and an alert per bound of each of its thresholds; then one group with the
// defaults for every other plan. The file replaces dashboards/alerts/probefleet.rules.yml.
import { createHash } from 'node:crypto';
import type { Plan } from '../../contracts/plan.js';
import { ALERT_DEFAULTS, thresholdName, thresholdQuantitySpec, type Threshold } from '../../contracts/thresholds.js';
import { alertSpecs, RULE_GROUP, type AlertGroup, type AlertScope, type AlertSpec } from './alerts.js';

const shortHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 10);

const planScope = (plan: string): AlertScope => ({
  matcher: `plan="${plan}", `,
  by: 'plan, ',
  suffix: shortHash(plan),
});

const UNIT_TEXT = { ms: 'ms', bytes: 'B', share: '(a share of 1)', per_second: 'per second' } as const;

/** One alert per bound: the threshold's value in the last run beyond it (probefleet_threshold_value, base units). */
function thresholdAlerts(plan: Pick<Plan, 'name'>, t: Threshold): AlertSpec[] {
  const name = thresholdName(t);
  const spec = thresholdQuantitySpec(t.quantity);
  return (['max', 'min'] as const).flatMap((bound): AlertSpec[] => {
    const limit = t[bound];
    if (limit === undefined) return [];
    const aggregate = bound === 'max' ? 'max' : 'min';
    return [
      {
        name: 'ProbefleetThresholdBreached',
        title: `ProbefleetThresholdBreached ${plan.name} ${name} ${bound}`,
        uid: `pf-threshold-${shortHash(`${plan.name}\u0000${name}\u0000${bound}`)}`,
        labels: { plan: plan.name, threshold: name },
        query: `${aggregate} by (plan, region, target, probe, variant) (probefleet_threshold_value{plan="${plan.name}", threshold="${name}"})`,
        op: bound === 'max' ? '>' : '<',
        threshold: spec.unit === 'ms' ? limit / 1000 : limit,
        for: '10m',
        severity: 'warning',
        summary: `${spec.label} from {{ $labels.region }} to {{ $labels.target }} ${bound === 'max' ? 'above' : 'below'} the threshold ${name}`,
        describe: (v) =>
          `The last run of plan ${plan.name} measured ${spec.label} of {{ $labels.probe }} {{ $labels.variant }} from ` +
          `{{ $labels.region }} to {{ $labels.target }} at ${spec.unit === 'ms' ? v.seconds : spec.unit === 'share' ? v.ratio : v.number}: ` +
          `the plan's threshold ${name} says ${bound} ${limit} ${UNIT_TEXT[spec.unit]} (docs/thresholds.md).`,
      },
    ];
  });
}

export function planAlertGroups(plans: Pick<Plan, 'name' | 'alerts' | 'thresholds'>[]): AlertGroup[] {
  const groups = plans.map((plan) => ({
    name: `${RULE_GROUP}-plan-${plan.name}`,
    alerts: [
      ...alertSpecs({ ...ALERT_DEFAULTS, ...plan.alerts }, planScope(plan.name)).map((a) => ({
        ...a,
        title: `${a.name} ${plan.name}`,
        labels: { plan: plan.name },
      })),
      ...(plan.thresholds ?? []).flatMap((t) => thresholdAlerts(plan, t)),
    ],
  }));
  const others: AlertScope = {
    matcher: `plan!~"${plans.map((p) => p.name).join('|')}", `,
    by: 'plan, ',
    suffix: 'others',
  };
  return [
    ...groups,
    {
      name: `${RULE_GROUP}-other-plans`,
      alerts: alertSpecs(ALERT_DEFAULTS, others).map((a) => ({ ...a, title: `${a.name} (other plans)` })),
    },
  ];
}
