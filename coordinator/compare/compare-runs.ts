// Compares a run with its baseline, the plan's earlier runs. Jobs are paired by what they are
// (region, target, probe, variant and parameters: the job id without its run id), or, when the
// parameters changed, by region, target, probe and variant alone (the change is named). Each
// quantity of the new run, with its own 95% interval, is judged against the same quantity's
// values in the earlier runs (rules.ts); the new-connection cost is compared per region and
// target; findings that appeared or disappeared since the newest earlier run are listed; and
// whatever the runs do not share is named rather than silently dropped.
import {
  COMPARISON_SCHEMA,
  type ComparedQuantity,
  type ComparedRun,
  type Difference,
  type FindingChange,
  type NotCompared,
  type RunComparison,
} from '../../contracts/comparison.js';
import { QUANTITIES, type QuantityId } from '../../contracts/quantities.js';
import type { Finding } from '../../contracts/findings.js';
import type { Experiment, Target } from '../../contracts/plan.js';
import { PROBES, type ProbeKind } from '../../contracts/probes/index.js';
import type { ProbeResult, RunReport, RunReportHead, UnfinishedJob } from '../../contracts/result.js';
import { BadInputError } from '../../common/bad-input.js';
import { median } from '../../common/stats.js';
import {
  COMPARISON_RESAMPLES,
  COMPARISON_SEED,
  costOf,
  valuesOfResult,
  type ReuseResult,
  type RunValue,
} from '../run-quantities.js';
import { BASELINE_RULE, baselineOf, cpuWaitReach, judge, minChangeFor, withCpuWait } from './rules.js';

type Variant = Record<string, string | number | boolean>;

/** The most jobs a run may have to be compared, the new run and each earlier one: a comparison
 * reads its runs whole and makes a row per job and quantity (docs/compare.md, "Big runs"). */
export const COMPARED_JOBS_PER_RUN = 10_000;

export class RunTooBigToCompareError extends BadInputError {
  override name = 'RunTooBigToCompareError';
  constructor(
    readonly run: string,
    readonly jobs: number,
  ) {
    super(
      `${run}: ${jobs.toLocaleString('en-US')} jobs, over the ${COMPARED_JOBS_PER_RUN.toLocaleString('en-US')} a run may have to be compared (docs/compare.md, "Big runs")`,
    );
  }
}

/** Refuses a run too big to compare, named as the user knows it (a file, a run id): from its whole
 * report, or from its stored head before the rest is read. */
export function checkComparable(name: string, run: RunReport | RunReportHead): void {
  const jobs = ('results' in run ? run.results.length : run.resultCount) + run.unfinishedJobs.length;
  if (jobs > COMPARED_JOBS_PER_RUN) throw new RunTooBigToCompareError(name, jobs);
}

/** One job of a run: its result, or why it has none. */
interface RunJob {
  /** The job id without the run id: `<region>.<target>.<probe>-<variant>-<hash of parameters>`. */
  key: string;
  region: string;
  target: string;
  probe: ProbeKind;
  variant: Variant;
  result?: ProbeResult;
  unfinished?: UnfinishedJob;
}

/** Region, target and names of run ids contain no "."; run ids may. */
const jobKey = (jobId: string) => jobId.split('.').slice(-3).join('.');
const variantKey = (variant: Variant) => JSON.stringify(Object.entries(variant).sort(([a], [b]) => a.localeCompare(b)));
const placeKey = (j: Pick<RunJob, 'region' | 'target' | 'probe' | 'variant'>) =>
  [j.region, j.target, j.probe, variantKey(j.variant)].join('\u0000');
export const variantText = (variant: Variant) => Object.values(variant).join(' ');

function jobsOf(report: RunReport): RunJob[] {
  return [
    ...report.results.map((r) => ({
      key: jobKey(r.jobId),
      region: r.region,
      target: r.target,
      probe: r.probe,
      variant: r.variant as Variant,
      result: r,
    })),
    ...report.unfinishedJobs.map((u) => ({
      key: jobKey(u.jobId),
      region: u.region,
      target: u.target,
      probe: u.probe,
      variant: u.variant,
      unfinished: u,
    })),
  ];
}

/** Pairs by job key, then what is left by place when each side has exactly one job there. */
function pairJobs(before: RunJob[], after: RunJob[]) {
  const pairs: { before: RunJob; after: RunJob; sameParameters: boolean }[] = [];
  const afterByKey = new Map(after.map((j) => [j.key, j]));
  const restBefore: RunJob[] = [];
  const taken = new Set<RunJob>();
  for (const b of before) {
    const a = afterByKey.get(b.key);
    if (a) {
      pairs.push({ before: b, after: a, sameParameters: true });
      taken.add(a);
    } else restBefore.push(b);
  }
  const restAfter = after.filter((a) => !taken.has(a));
  const byPlace = (jobs: RunJob[]) => {
    const map = new Map<string, RunJob[]>();
    for (const j of jobs) map.set(placeKey(j), [...(map.get(placeKey(j)) ?? []), j]);
    return map;
  };
  const beforePlaces = byPlace(restBefore);
  const afterPlaces = byPlace(restAfter);
  const onlyBefore: RunJob[] = [];
  for (const [place, jobs] of beforePlaces) {
    const other = afterPlaces.get(place);
    if (jobs.length === 1 && other?.length === 1) {
      pairs.push({ before: jobs[0], after: other[0], sameParameters: false });
      afterPlaces.delete(place);
    } else onlyBefore.push(...jobs);
  }
  return { pairs, onlyBefore, onlyAfter: [...afterPlaces.values()].flat() };
}

const relative = (change: number, center: number) => (center === 0 ? null : change / Math.abs(center));

const whereOf = (j: Pick<RunJob, 'region' | 'target' | 'probe' | 'variant'>) => ({
  region: j.region,
  target: j.target,
  probe: j.probe,
  variant: j.variant,
});

function failure(job: RunJob): string | undefined {
  if (job.unfinished)
    return `${job.unfinished.status === 'failed' ? 'no result' : 'not run'}: ${job.unfinished.reason}`;
  const error = job.result?.error;
  return error && !job.result?.ok ? `${error.code}: ${error.message}` : undefined;
}

/** What the rule is given for one quantity: the new run's value, the earlier runs' values, newest first. */
interface Compared {
  where: ReturnType<typeof whereOf>;
  quantity: QuantityId;
  after: RunValue;
  earlier: number[];
  /** Whether the move the value made is for the worse; default from the quantity's direction. */
  worse?: boolean;
  /** How far the new run's worker's wait for a CPU could have moved the value, and the earlier
   * runs' (rules.ts cpuWaitReach), one for each of `earlier`. */
  waitReach: { after: number; earlier: number[] };
}

function quantityRow({ where, quantity, after, earlier, worse, waitReach }: Compared): ComparedQuantity {
  const baseline = baselineOf(earlier);
  const change = after.value - baseline.median;
  const worseByDirection = QUANTITIES[quantity].better === 'higher' ? change < 0 : change > 0;
  return {
    ...where,
    quantity,
    baseline,
    after: after.value,
    afterCi95: after.ci95,
    n: after.n,
    change,
    relativeChange: relative(change, baseline.median),
    interval: after.interval,
    minChange: minChangeFor(quantity, baseline.median),
    ...withCpuWait(
      quantity,
      judge(quantity, baseline, after.value, after.ci95, worse ?? worseByDirection),
      change,
      waitReach.after,
      median(waitReach.earlier),
    ),
  };
}

/** The new run's jobs, each with its counterpart in every earlier run (undefined where that run lacks it). */
interface JobHistory {
  after: RunJob;
  earlier: (RunJob | undefined)[];
}

/** The quantities of one job of the new run against the same job in the earlier runs. */
function compareJob(history: JobHistory, rows: Compared[], notCompared: NotCompared[]): void {
  const { after } = history;
  const where = whereOf(after);
  if (!after.result) {
    notCompared.push({ ...where, reason: `after: ${failure(after)}` });
    return;
  }
  const earlier = history.earlier.map((job) => (job?.result ? valuesOfResult(job.result) : undefined));
  const waitOf = (job: RunJob | undefined) => job?.result?.worker.cpuWaitMs ?? 0;
  const newest = history.earlier[0];
  const failed = [
    ...(failure(after) ? [`after: ${failure(after)}`] : []),
    ...(newest && failure(newest) ? [`before: ${failure(newest)}`] : []),
  ];
  // A job that failed measures little: say so once rather than per missing quantity.
  if (failed.length > 0) notCompared.push({ ...where, reason: `partly measured (${failed.join('; ')})` });
  const own = valuesOfResult(after.result);
  for (const [quantity, value] of own) {
    const measured = earlier.flatMap((run, i) => {
      const v = run?.get(quantity);
      return v && typeof v !== 'string'
        ? [{ value: v.value, reach: cpuWaitReach(quantity, v.n, waitOf(history.earlier[i])) }]
        : [];
    });
    const values = measured.map((m) => m.value);
    if (typeof value === 'string') notCompared.push({ ...where, quantity, reason: value });
    else if (values.length > 0) {
      const waitReach = {
        after: cpuWaitReach(quantity, value.n, waitOf(after)),
        earlier: measured.map((m) => m.reach),
      };
      rows.push({ where, quantity, after: value, earlier: values, waitReach });
    } else if (failed.length === 0) notCompared.push({ ...where, quantity, reason: 'measured only after' });
  }
  if (failed.length === 0 && earlier[0])
    for (const quantity of earlier[0].keys())
      if (!own.has(quantity)) notCompared.push({ ...where, quantity, reason: 'measured only before' });
}

/** The new-connection cost is a difference of two medians: either job's wait can move it. */
const costWaitReach = (reused: ProbeResult, fresh: ProbeResult, samples: number) =>
  cpuWaitReach('new_connection_cost', samples, (reused.worker.cpuWaitMs ?? 0) + (fresh.worker.cpuWaitMs ?? 0));

/** The new-connection cost per region and target where the new run has both reuse modes. */
function compareCosts(histories: JobHistory[]): Compared[] {
  const places = new Map<string, Partial<Record<'reused' | 'new', JobHistory>>>();
  for (const history of histories) {
    const result = history.after.result;
    if (result?.probe !== 'reuse' || result.variant.mode === 'cold') continue;
    const key = `${result.region}\u0000${result.target}\u0000${result.variant.scheme}`;
    places.set(key, { ...places.get(key), [result.variant.mode]: history });
  }
  const rows: Compared[] = [];
  for (const { reused, new: fresh } of places.values()) {
    if (!reused || !fresh) continue;
    const after = costOf(reused.after.result as ReuseResult, fresh.after.result as ReuseResult, true);
    if (!after) continue;
    const earlier = reused.earlier.flatMap((r, i) => {
      const n = fresh.earlier[i];
      if (r?.result?.probe !== 'reuse' || n?.result?.probe !== 'reuse') return [];
      const cost = costOf(r.result, n.result, false);
      return cost ? [{ ...cost, reach: costWaitReach(r.result, n.result, cost.samples) }] : [];
    });
    if (earlier.length === 0) continue;
    // The cost falls when new connections get cheaper and when reused requests get slower: the
    // median that moved more from its baseline says which.
    const reusedMove = after.reusedMedian - median(earlier.map((c) => c.reusedMedian));
    const newMove = after.newMedian - median(earlier.map((c) => c.newMedian));
    const { region, target, variant } = reused.after;
    rows.push({
      where: { region, target, probe: 'reuse', variant: { scheme: variant.scheme } },
      quantity: 'new_connection_cost',
      after: after.value,
      earlier: earlier.map((c) => c.value.value),
      worse: Math.abs(reusedMove) > Math.abs(newMove) ? reusedMove > 0 : newMove > 0,
      waitReach: {
        after: costWaitReach(reused.after.result!, fresh.after.result!, after.samples),
        earlier: earlier.map((c) => c.reach),
      },
    });
  }
  return rows;
}

const findingKey = (f: Finding) => [f.code, f.region, f.target, f.probe].join('\u0000');

/** Findings that appeared or disappeared at places (region and target) both runs measured. */
function findingChanges(before: RunReport, after: RunReport): FindingChange[] {
  const measured = (r: RunReport) => new Set(r.results.map((x) => `${x.region}\u0000${x.target}`));
  const [mb, ma] = [measured(before), measured(after)];
  const shared = (f: Finding) => mb.has(`${f.region}\u0000${f.target}`) && ma.has(`${f.region}\u0000${f.target}`);
  const keys = (r: RunReport) => new Set(r.findings.map(findingKey));
  const [kb, ka] = [keys(before), keys(after)];
  const once = (findings: Finding[]) => [...new Map(findings.map((f) => [findingKey(f), f])).values()];
  return [
    ...once(after.findings.filter((f) => shared(f) && !kb.has(findingKey(f)))).map((f) => ({
      ...f,
      change: 'appeared' as const,
    })),
    ...once(before.findings.filter((f) => shared(f) && !ka.has(findingKey(f)))).map((f) => ({
      ...f,
      change: 'disappeared' as const,
    })),
  ];
}

/** The experiment of the plan that made this job (the one whose variants for the target include it). */
function experimentOf(report: RunReport, job: RunJob): Experiment | undefined {
  const target = report.plan.targets.find((t) => t.name === job.target);
  if (!target) return undefined;
  return report.plan.experiments.find(
    (e) =>
      e.probe === job.probe &&
      (!e.targets || e.targets.includes(job.target)) &&
      (PROBES[e.probe].variants as (p: unknown, t: Target) => Variant[])(e, target).some(
        (v) => variantKey(v) === variantKey(job.variant),
      ),
  );
}

const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

function parameterDifference(before: Experiment, after: Experiment, where: string): Difference | undefined {
  const { targets: _b, ...pb } = before as Record<string, unknown>;
  const { targets: _a, ...pa } = after as Record<string, unknown>;
  const changed = [...new Set([...Object.keys(pb), ...Object.keys(pa)])]
    .sort()
    .filter((k) => JSON.stringify(pb[k]) !== JSON.stringify(pa[k]));
  if (changed.length === 0) return undefined;
  const side = (p: Record<string, unknown>) =>
    changed.map((k) => `${k}: ${k in p ? shown(p[k]) : '(default)'}`).join(', ');
  return { kind: 'parameters', where, before: side(pb), after: side(pa) };
}

const targetSettings = (t: Target) => JSON.stringify({ headers: t.headers ?? {}, tls: t.tls ?? {} });

function differencesOf(
  before: RunReport,
  after: RunReport,
  pairs: { before: RunJob; after: RunJob; sameParameters: boolean }[],
  onlyBefore: RunJob[],
  onlyAfter: RunJob[],
): Difference[] {
  const out: Difference[] = [];
  const both = <T>(b: T, a: T) => [b, a] as const;
  if (before.plan.name !== after.plan.name)
    out.push({ kind: 'plan', where: 'plan', before: before.plan.name, after: after.plan.name });
  if (before.mode !== after.mode) out.push({ kind: 'mode', where: 'mode', before: before.mode, after: after.mode });

  const regions = (r: RunReport) => [...new Set([...r.results, ...r.unfinishedJobs].map((x) => x.region))];
  const [rb, ra] = both(regions(before), regions(after));
  for (const region of rb)
    if (!ra.includes(region)) out.push({ kind: 'region', where: region, before: region, after: null });
  for (const region of ra)
    if (!rb.includes(region)) out.push({ kind: 'region', where: region, before: null, after: region });

  const [tb, ta] = both(before.plan.targets, after.plan.targets);
  for (const t of tb) {
    const other = ta.find((x) => x.name === t.name);
    if (!other) out.push({ kind: 'target', where: t.name, before: t.url, after: null });
    else {
      if (other.url !== t.url) out.push({ kind: 'target-url', where: t.name, before: t.url, after: other.url });
      if (targetSettings(t) !== targetSettings(other))
        out.push({ kind: 'target-settings', where: t.name, before: targetSettings(t), after: targetSettings(other) });
    }
  }
  for (const t of ta)
    if (!tb.some((x) => x.name === t.name)) out.push({ kind: 'target', where: t.name, before: null, after: t.url });

  // Experiments on a target one run has and the other lacks, by probe and variant.
  const variantsAt = (jobs: RunJob[]) => {
    const map = new Map<string, Set<string>>();
    for (const j of jobs) {
      const where = `${j.target} ${j.probe}`;
      map.set(where, (map.get(where) ?? new Set()).add(variantText(j.variant) || j.probe));
    }
    return map;
  };
  const sharedTargets = new Set(tb.filter((t) => ta.some((x) => x.name === t.name)).map((t) => t.name));
  const sharedRegions = new Set(rb.filter((r) => ra.includes(r)));
  const onShared = (j: RunJob) => sharedTargets.has(j.target) && sharedRegions.has(j.region);
  const [vb, va] = both(variantsAt(onlyBefore.filter(onShared)), variantsAt(onlyAfter.filter(onShared)));
  for (const where of new Set([...vb.keys(), ...va.keys()])) {
    const list = (s: Set<string> | undefined) => (s ? [...s].sort().join(', ') : null);
    out.push({ kind: 'experiment', where, before: list(vb.get(where)), after: list(va.get(where)) });
  }

  const seen = new Set<string>();
  for (const pair of pairs) {
    if (pair.sameParameters) continue;
    const [eb, ea] = both(experimentOf(before, pair.before), experimentOf(after, pair.after));
    const where = `${pair.after.target} ${pair.after.probe}`;
    const difference = eb && ea ? parameterDifference(eb, ea, where) : undefined;
    const key = JSON.stringify(difference);
    if (difference && !seen.has(key)) {
      seen.add(key);
      out.push(difference);
    }
  }
  return out;
}

function comparedRun(report: RunReport, source: string): ComparedRun {
  return {
    runId: report.runId,
    plan: report.plan.name,
    mode: report.mode,
    startedAt: report.startedAt,
    finishedAt: report.finishedAt,
    regions: [...new Set(report.results.map((r) => r.region))].sort(),
    source,
  };
}

/** Place order: region, target, probe (the probe list's order), variant; then the quantity list's order. */
function byPlace(a: ComparedQuantity | NotCompared, b: ComparedQuantity | NotCompared): number {
  const probes = Object.keys(PROBES);
  const quantities = Object.keys(QUANTITIES);
  return (
    a.region.localeCompare(b.region) ||
    a.target.localeCompare(b.target) ||
    probes.indexOf(a.probe) - probes.indexOf(b.probe) ||
    variantText(a.variant).localeCompare(variantText(b.variant)) ||
    quantities.indexOf(a.quantity ?? '') - quantities.indexOf(b.quantity ?? '')
  );
}

/** Where each run was read from: file names, or "redis". */
export interface ComparisonSources {
  baseline: string[];
  after: string;
}

/**
 * The new run (`after`) against its baseline: the plan's earlier runs, newest first. Findings and
 * what the plans do not share are against the newest earlier run.
 */
export function compareRuns(
  baseline: readonly RunReport[],
  after: RunReport,
  sources?: ComparisonSources,
): RunComparison {
  const [newest] = baseline;
  if (!newest) throw new RangeError('a comparison needs at least one earlier run');
  checkComparable(sources?.after ?? after.runId, after);
  for (const [i, run] of baseline.entries()) checkComparable(sources?.baseline[i] ?? run.runId, run);
  const afterJobs = jobsOf(after);
  const pairings = baseline.map((run) => pairJobs(jobsOf(run), afterJobs));
  // By the after run's job: a search of the pairs per job was quadratic in the run's jobs.
  const earlierByJob = pairings.map((p) => new Map(p.pairs.map((pair) => [pair.after, pair.before])));
  const histories: JobHistory[] = afterJobs.map((job) => ({
    after: job,
    earlier: earlierByJob.map((earlier) => earlier.get(job)),
  }));
  const rows: Compared[] = [];
  const notCompared: NotCompared[] = [];
  const { pairs, onlyBefore, onlyAfter } = pairings[0];
  for (const history of histories) {
    if (history.earlier.some(Boolean)) compareJob(history, rows, notCompared);
    else notCompared.push({ ...whereOf(history.after), reason: 'only in the after run' });
  }
  for (const job of onlyBefore) notCompared.push({ ...whereOf(job), reason: 'only in the before run' });
  rows.push(...compareCosts(histories));
  const quantities = rows.map(quantityRow).sort(byPlace);
  notCompared.sort(byPlace);
  const findings = findingChanges(newest, after);
  const count = (verdict: ComparedQuantity['verdict']) => quantities.filter((q) => q.verdict === verdict).length;
  const baselineRuns = baseline.map((run, i) => comparedRun(run, sources?.baseline[i] ?? 'redis'));
  return {
    schema: COMPARISON_SCHEMA,
    before: baselineRuns[0],
    baseline: baselineRuns,
    after: comparedRun(after, sources?.after ?? 'redis'),
    method: {
      confidence: 0.95,
      resamples: COMPARISON_RESAMPLES,
      seed: COMPARISON_SEED,
      minRuns: BASELINE_RULE.minRuns,
      spreadK: BASELINE_RULE.spreadK,
      grossAbsoluteFactor: BASELINE_RULE.grossAbsoluteFactor,
      grossRatio: BASELINE_RULE.grossRatio,
    },
    summary: {
      regressed: count('regressed'),
      improved: count('improved'),
      unchanged: count('unchanged'),
      findingsAppeared: findings.filter((f) => f.change === 'appeared').length,
      findingsDisappeared: findings.filter((f) => f.change === 'disappeared').length,
    },
    quantities,
    findings,
    differences: differencesOf(newest, after, pairs, onlyBefore, onlyAfter),
    notCompared,
  };
}
