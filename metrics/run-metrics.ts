// The last-run gauges of a finished run: one registry per region that has results, pushed as
// the `run` group {plan, region}, which replaces the previous run's. A target dropped from the
// plan drops out with the next run; a region without results keeps its previous group, so its
// last-run time ages and the missing-run alert can see it.
import { Registry } from 'prom-client';
import { JOB_OUTCOMES, RUN_METRICS, TARGET_INFO_METRIC } from '../contracts/metric-names.js';
import { PROBE_KINDS, type ProbeKind } from '../contracts/probes/index.js';
import type { ProbeResult, ResultOf, RunInPages, RunReport } from '../contracts/result.js';
import { mappingOf, type RunRecorder } from './probe-mappings.js';
import { metricOf, metricsOf } from './prom.js';
import type { MetricsPusher } from './pusher.js';
import type { Logger } from '../common/log.js';
import { thresholdQuantitySpec } from '../contracts/thresholds.js';
import { variantLabel } from './comparison-metrics.js';

export interface RegionRunMetrics {
  plan: string;
  region: string;
  registry: Registry;
}

export function runMetricsOf(report: RunReport): RegionRunMetrics[] {
  const builder = runMetricsBuilder(report);
  builder.add(report.results);
  return builder.groups();
}

/** runMetricsOf, a page of results at a time: only the series are held, never the results. */
export async function runMetricsOfPages(run: RunInPages): Promise<RegionRunMetrics[]> {
  const builder = runMetricsBuilder(run.head);
  for await (const page of run.pages()) builder.add(page);
  return builder.groups();
}

/** Pushes every region's group of the run; true when all of them arrived (failures are logged
 * and counted). Never throws: metrics never fail the run that made them. */
export async function pushRunMetrics(
  pusher: MetricsPusher,
  run: RunReport | RunInPages,
  log: Logger,
): Promise<boolean> {
  let groups: RegionRunMetrics[];
  const head = 'head' in run ? run.head : run;
  try {
    groups = 'head' in run ? await runMetricsOfPages(run) : runMetricsOf(run);
  } catch (err) {
    log.error({ err, runId: head.runId }, 'cannot turn the run into metrics');
    return false;
  }
  const pushed = await Promise.all(
    groups.map(({ plan, region, registry }) => pusher.replace('run', { plan, region }, registry)),
  );
  return pushed.every(Boolean);
}

/** The registries of the regions that have results, built as the results come. */
function runMetricsBuilder(report: Omit<RunReport, 'results'>) {
  const regions = new Map<string, ReturnType<typeof regionRegistry>>();
  const regionOf = (region: string) =>
    regions.get(region) ?? regions.set(region, regionRegistry(report, region)).get(region)!;
  return {
    add(results: readonly ProbeResult[]): void {
      const byRegion = new Map<string, ProbeResult[]>();
      for (const r of results) {
        const mine = byRegion.get(r.region);
        if (mine) mine.push(r);
        else byRegion.set(r.region, [r]);
      }
      for (const [region, mine] of byRegion) regionOf(region).add(mine);
    },
    groups(): RegionRunMetrics[] {
      return [...regions.keys()]
        .sort()
        .map((region) => ({ plan: report.plan.name, region, registry: regions.get(region)!.finish() }));
    },
  };
}

/** One region's registry: what the report says of it at once, its results as they come, and the
 * counts over its results and jobs without one at the end. */
function regionRegistry(report: Omit<RunReport, 'results'>, region: string) {
  const registry = new Registry();
  const metrics = metricsOf(RUN_METRICS, registry);
  const record: RunRecorder = (metric, labels, value) => metrics[metric].set(labels, value);
  const unfinished = report.unfinishedJobs.filter((u) => u.region === region);

  record('lastRun', {}, Date.parse(report.finishedAt) / 1000);
  for (const c of report.thresholds.checks) {
    if (c.region !== region) continue;
    const labels = {
      threshold: c.threshold,
      quantity: c.quantity,
      target: c.target,
      probe: c.probe,
      variant: variantLabel(c.variant),
    };
    const unit = thresholdQuantitySpec(c.quantity).unit;
    record('thresholdValue', labels, unit === 'ms' ? c.value / 1000 : c.value);
    record('thresholdBreached', labels, c.breached ? 1 : 0);
  }

  const findings = new Map<string, { labels: Record<string, string>; count: number }>();
  for (const f of report.findings) {
    if (f.region !== region) continue;
    const key = [f.target, f.probe, f.code].join('\u0000');
    const entry = findings.get(key) ?? {
      labels: { target: f.target, probe: f.probe, finding: f.code, severity: f.severity },
      count: 0,
    };
    entry.count++;
    findings.set(key, entry);
  }
  for (const { labels, count } of findings.values()) record('findings', labels, count);

  recordTargetInfo(report, registry);

  const jobCounts = new Map<string, Record<(typeof JOB_OUTCOMES)[number], number>>();
  const countOf = (probe: string) =>
    jobCounts.get(probe) ?? jobCounts.set(probe, { ok: 0, error: 0, failed: 0, not_run: 0 }).get(probe)!;
  const success = new Map<string, { target: string; probe: string; ok: boolean }>();
  const mark = (target: string, probe: string, ok: boolean) => {
    const key = `${target}\u0000${probe}`;
    success.set(key, { target, probe, ok: ok && (success.get(key)?.ok ?? true) });
  };
  return {
    add(results: readonly ProbeResult[]): void {
      for (const r of results) {
        countOf(r.probe)[r.ok ? 'ok' : 'error']++;
        mark(r.target, r.probe, r.ok);
      }
      for (const probe of PROBE_KINDS) {
        const ofProbe = results.filter((r) => r.probe === probe);
        if (ofProbe.length > 0) recordRun(probe, ofProbe, record, report, region);
      }
    },
    finish(): Registry {
      for (const u of unfinished) countOf(u.probe)[u.status === 'failed' ? 'failed' : 'not_run']++;
      for (const [probe, counts] of jobCounts) {
        for (const outcome of JOB_OUTCOMES) record('lastRunJobs', { probe, outcome }, counts[outcome]);
      }
      for (const u of unfinished) mark(u.target, u.probe, false);
      for (const { target, probe, ok } of success.values()) record('probeSuccess', { target, probe }, ok ? 1 : 0);
      return registry;
    },
  };
}

/** `probefleet_target_info{target, <the plan's targetLabels>} 1` per target, for a plan with labels:
 * its label names are the plan's, so the gauge is made here, with the registry of the run. */
function recordTargetInfo(report: Omit<RunReport, 'results'>, registry: Registry): void {
  const names = report.plan.targetLabels ?? [];
  if (names.length === 0) return;
  const info = metricOf({ ...TARGET_INFO_METRIC, labels: [...TARGET_INFO_METRIC.labels, ...names] }, registry);
  for (const target of report.plan.targets)
    info.set({ target: target.name, ...Object.fromEntries(names.map((n) => [n, target.labels?.[n] ?? ''])) }, 1);
}

function recordRun<K extends ProbeKind>(
  probe: K,
  results: ProbeResult[],
  record: RunRecorder,
  report: Omit<RunReport, 'results'>,
  region: string,
): void {
  mappingOf(probe).run(results as ResultOf<K>[], record, { report, region });
}
