// `ipFamily: both` measures a target over IPv4 and IPv6 side by side: the plan as run holds two
// targets in its place, NAME-ipv4 and NAME-ipv6, each connecting over its family only. Experiments
// and thresholds that name NAME cover both (contracts/plan.ts `listedAt`), and everything keyed by
// a target's name (results, reports, metrics, compare) shows the two next to each other, as
// blackbox_exporter users run one module per family.
import type { LoadedPlan } from './loaded-plan.js';
import { DUAL_STACK_SUFFIXES, type Plan, type RunTarget } from '../contracts/plan.js';

/** The plan with each `ipFamily: both` target made two (its TLS settings given to both); targets
 * made earlier (a schedule's plan as run) are left as they are. */
export function withDualStackTargets(plan: Plan, tls: LoadedPlan['tls']): Pick<LoadedPlan, 'plan' | 'tls'> {
  if (!plan.targets.some((t) => t.ipFamily === 'both')) return { plan, tls: { ...tls } };
  const targetTls = { ...tls };
  const targets = plan.targets.flatMap((target): RunTarget[] => {
    if (target.ipFamily !== 'both') return [target];
    const settings = targetTls[target.name];
    delete targetTls[target.name];
    return ([4, 6] as const).map((family) => {
      const name = `${target.name}${DUAL_STACK_SUFFIXES[family]}`;
      if (settings) targetTls[name] = settings;
      return { ...target, name, ipFamily: family, dualStackOf: target.name };
    });
  });
  return { plan: { ...plan, targets }, tls: targetTls };
}
