// A plan's thresholds against a run: each threshold's quantity, wherever the run measured it
// (region, target, probe and variant, filtered as the threshold says), checked against its max
// and min. The values are the ones a comparison judges (run-quantities.ts), so a threshold and a
// verdict never disagree on what the run measured.
import { covers, type Plan, type RunTarget } from '../contracts/plan.js';
import type { ProbeResult } from '../contracts/result.js';
import { thresholdName, type Threshold, type ThresholdCheck, type ThresholdOutcome } from '../contracts/thresholds.js';
import { costOf, reuseTotals, valuesOfResult, type ReuseResult, type RunValue } from './run-quantities.js';

interface MeasuredValue {
  where: Pick<ThresholdCheck, 'region' | 'target' | 'probe' | 'variant'>;
  /** The value, or why the run has none (too few samples). */
  value: RunValue | string;
}

/** The threshold's quantity in one result (the new-connection cost is per region and target, below). */
function valueIn(threshold: Threshold, result: ProbeResult): RunValue | string | undefined {
  const values = valuesOfResult(result);
  if (threshold.quantity !== 'success_ratio') return values.get(threshold.quantity);
  const errors = values.get('error_rate');
  return errors === undefined || typeof errors === 'string'
    ? errors
    : { ...errors, value: 1 - errors.value, ci95: errors.ci95 && [1 - errors.ci95[1], 1 - errors.ci95[0]] };
}

function costs(results: ProbeResult[]): MeasuredValue[] {
  const reuse = results.filter((r): r is ReuseResult => r.probe === 'reuse' && r.variant.mode !== 'cold');
  // The first `new` result of each region, target and scheme, found by key: a run of 100,000 jobs
  // searched the list once per `reused` result.
  const pairKey = (r: ReuseResult) => [r.region, r.target, r.variant.scheme].join('\u0000');
  const freshByKey = new Map<string, ReuseResult>();
  for (const r of reuse) if (r.variant.mode === 'new' && !freshByKey.has(pairKey(r))) freshByKey.set(pairKey(r), r);
  return reuse.flatMap((reused) => {
    if (reused.variant.mode !== 'reused') return [];
    const fresh = freshByKey.get(pairKey(reused));
    if (!fresh) return [];
    const cost = costOf(reuseTotals(reused), reuseTotals(fresh), false);
    const where = { region: reused.region, target: reused.target, probe: 'reuse' as const };
    return [
      {
        where: { ...where, variant: { scheme: reused.variant.scheme } },
        value: cost ? cost.value : 'too few answered requests for a new-connection cost',
      },
    ];
  });
}

/** A threshold's `targets` name a target as an experiment's do, the name written for the two
 * targets of `ipFamily: both` included (contracts/plan.ts `covers`). */
const applier =
  (targets: Map<string, RunTarget>) => (t: Threshold, r: Pick<ProbeResult, 'region' | 'target' | 'probe'>) =>
    (!t.regions || t.regions.includes(r.region)) &&
    covers(t.targets, targets.get(r.target) ?? { name: r.target }) &&
    (!t.probes || t.probes.includes(r.probe));

const whereText = (w: MeasuredValue['where']) =>
  [w.region, w.target, w.probe, ...Object.values(w.variant).map(String)].join(' ');

/**
 * The plan's thresholds checked over a run's results, added a group at a time: every value a
 * threshold reads is one result's, or one region and target's new-connection cost, so a group
 * holding each target's results whole (coordinator/analysis.ts, analysisGroupOf) checks exactly
 * what the whole run would. Checks come out in the plan's order of thresholds.
 */
export class ThresholdChecker {
  private readonly thresholds: readonly Threshold[];
  private readonly applies: ReturnType<typeof applier>;
  /** Per threshold, in the plan's order: its checks, and what it could not check. */
  private readonly checked: { checks: ThresholdCheck[]; unchecked: ThresholdOutcome['unchecked'] }[];

  constructor(plan: Pick<Plan, 'thresholds' | 'targets'>) {
    this.thresholds = plan.thresholds ?? [];
    this.applies = applier(new Map(plan.targets.map((t) => [t.name, t])));
    this.checked = this.thresholds.map(() => ({ checks: [], unchecked: [] }));
  }

  add(results: ProbeResult[]): void {
    if (this.thresholds.length === 0) return;
    const runCosts = costs(results);
    this.thresholds.forEach((t, i) => {
      const name = thresholdName(t);
      const { checks, unchecked } = this.checked[i]!;
      const measured: MeasuredValue[] =
        t.quantity === 'new_connection_cost'
          ? runCosts.filter((c) => this.applies(t, c.where))
          : results
              .filter((r) => this.applies(t, r))
              .flatMap((r) => {
                const value = valueIn(t, r);
                return value === undefined
                  ? []
                  : [{ where: { region: r.region, target: r.target, probe: r.probe, variant: r.variant }, value }];
              });
      for (const { where, value } of measured) {
        if (typeof value === 'string') {
          unchecked.push({ threshold: name, where: whereText(where), reason: value });
          continue;
        }
        const breached = (t.max !== undefined && value.value > t.max) || (t.min !== undefined && value.value < t.min);
        checks.push({
          threshold: name,
          quantity: t.quantity,
          ...where,
          value: value.value,
          max: t.max ?? null,
          min: t.min ?? null,
          breached,
        });
      }
    });
  }

  outcome(): ThresholdOutcome {
    const outcome: ThresholdOutcome = { checks: [], unchecked: [] };
    this.thresholds.forEach((t, i) => {
      const { checks, unchecked } = this.checked[i]!;
      if (checks.length === 0 && unchecked.length === 0)
        outcome.unchecked.push({
          threshold: thresholdName(t),
          where:
            [t.regions?.join(', '), t.targets?.join(', '), t.probes?.join(', ')].filter(Boolean).join(' ') || 'any',
          reason: `no result of this run measured ${t.quantity} there`,
        });
      outcome.unchecked.push(...unchecked);
      outcome.checks.push(...checks);
    });
    return outcome;
  }
}

export function checkThresholds(plan: Pick<Plan, 'thresholds' | 'targets'>, results: ProbeResult[]): ThresholdOutcome {
  const checker = new ThresholdChecker(plan);
  checker.add(results);
  return checker.outcome();
}
