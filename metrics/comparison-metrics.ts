// A comparison's verdicts as metrics: one registry per region of either run, pushed as the
// `compare` group {plan, region}, which replaces the previous comparison's. A region only the run
// before had still gets its group replaced (with the timestamp alone), so a verdict from an older
// comparison never lingers. The alert "regressed beyond baseline" reads these (dashboards/src/alerts.ts).
import { Registry } from 'prom-client';
import { VERDICTS, type ComparedQuantity, type RunComparison } from '../contracts/comparison.js';
import { COMPARISON_METRICS } from '../contracts/metric-names.js';
import type { Logger } from '../common/log.js';
import { metricsOf } from './prom.js';
import type { MetricsPusher } from './pusher.js';

/** The `variant` label: the variant's values joined by "/" (closed sets per probe, so bounded). */
export const variantLabel = (variant: ComparedQuantity['variant']) => Object.values(variant).join('/');

export function comparisonMetricsOf(comparison: RunComparison): { plan: string; region: string; registry: Registry }[] {
  const regions = [...new Set([...comparison.before.regions, ...comparison.after.regions])].sort();
  return regions.map((region) => {
    const registry = new Registry();
    const metrics = metricsOf(COMPARISON_METRICS, registry);
    metrics.timestamp.set(Date.parse(comparison.after.finishedAt) / 1000);
    for (const q of comparison.quantities) {
      if (q.region !== region) continue;
      const labels = { target: q.target, probe: q.probe, variant: variantLabel(q.variant), quantity: q.quantity };
      for (const verdict of VERDICTS) metrics.verdict.set({ ...labels, verdict }, verdict === q.verdict ? 1 : 0);
      if (q.relativeChange !== null) metrics.relativeChange.set(labels, q.relativeChange);
    }
    return { plan: comparison.after.plan, region, registry };
  });
}

/** Pushes every region's group; true when all arrived. Never throws (failures are logged and counted). */
export async function pushComparisonMetrics(
  pusher: MetricsPusher,
  comparison: RunComparison,
  log: Logger,
): Promise<boolean> {
  let groups: ReturnType<typeof comparisonMetricsOf>;
  try {
    groups = comparisonMetricsOf(comparison);
  } catch (err) {
    log.error({ err, runId: comparison.after.runId }, 'cannot turn the comparison into metrics');
    return false;
  }
  const pushed = await Promise.all(
    groups.map(({ plan, region, registry }) => pusher.replace('compare', { plan, region }, registry)),
  );
  return pushed.every(Boolean);
}
