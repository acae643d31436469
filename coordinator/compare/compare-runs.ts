// Compares two runs: jobs are paired by what they are (region, target, probe, variant and
// parameters: the job id without its run id), or, when the parameters changed, by region,
// target, probe and variant alone (the change is named). Each pair's measures become quantities
// with a change, a 95% interval and a verdict (rules.ts); the new-connection cost is compared
// per region and target; findings that appeared or disappeared where both runs measured are
// listed; and whatever the two runs do not share is named rather than silently dropped.
import {
  COMPARISON_SCHEMA,
  QUANTITIES,
  type ComparedQuantity,
  type ComparedRun,
  type Difference,
  type FindingChange,
  type NotCompared,
  type QuantityId,
  type RunComparison,
} from '../../contracts/comparison.js';
import type { Finding } from '../../contracts/findings.js';
import type { Experiment, Target } from '../../contracts/plan.js';
import { PROBES, type ProbeKind } from '../../contracts/probes/index.js';
import type { ProbeResult, ResultOf, RunReport, UnfinishedJob } from '../../contracts/result.js';
import { decodeHistogram } from '../../common/latency-histogram.js';
import {
  bootstrap,
  differenceInterval,
  percentile,
  percentileInterval,
  percentileRankInterval,
  wilsonInterval,
  type Estimate,
} from '../../common/stats.js';
import { answeredPhase } from '../samples.js';
import { measuresOf, type HistogramMeasure, type Measure, type SampleMeasure } from './measures.js';
import { judge, minChangeFor } from './rules.js';

export const COMPARISON_RESAMPLES = 2000;
export const COMPARISON_SEED = 0x5eed;
/** Fewer per-request totals than this on either side: the new-connection cost is not compared. */
const MIN_COST_SAMPLES = 6;

type Variant = Record<string, string | number | boolean>;

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

const relative = (change: number, before: number) => (before === 0 ? null : change / Math.abs(before));

function quantityRow(
  job: Pick<RunJob, 'region' | 'target' | 'probe' | 'variant'>,
  quantity: QuantityId,
  values: { before: number; after: number; n: ComparedQuantity['n'] },
  change: number,
  ci95: [number, number] | null,
  interval: ComparedQuantity['interval'],
  worse = QUANTITIES[quantity].better === 'higher' ? change < 0 : change > 0,
): ComparedQuantity {
  const minChange = minChangeFor(quantity, values.before);
  return {
    region: job.region,
    target: job.target,
    probe: job.probe,
    variant: job.variant,
    quantity,
    before: values.before,
    after: values.after,
    n: values.n,
    change,
    relativeChange: relative(change, values.before),
    ci95,
    interval,
    minChange,
    ...judge(change, ci95, minChange, worse),
  };
}

/** The fewest values whose p-th percentile has a distribution-free interval (p50: 6, p95: 72). */
export function fewestValuesFor(p: number): number {
  let n = 1;
  while (!percentileRankInterval(n, p)) n++;
  return n;
}

type Percentile = { name: 'p50' | 'p95'; at: number };
const SAMPLE_PERCENTILES: Percentile[] = [
  { name: 'p50', at: 50 },
  { name: 'p95', at: 95 },
];

/** Each percentile of two runs' samples, from each run's own distribution-free interval. */
function compareSamples(
  job: RunJob,
  before: SampleMeasure,
  after: SampleMeasure,
  notCompared: NotCompared[],
): ComparedQuantity[] {
  const [b, a] = [before.values, after.values].map((v) => Float64Array.from(v).sort());
  const n = { before: b.length, after: a.length };
  return SAMPLE_PERCENTILES.flatMap(({ name, at }) => {
    const quantity = before.quantities[name];
    const [eb, ea] = [percentileInterval(b, at), percentileInterval(a, at)];
    if (!eb || !ea) {
      notCompared.push({
        ...whereOf(job),
        quantity,
        reason: `too few samples for a ${name} interval (${n.before} before, ${n.after} after; a ${name} needs ${fewestValuesFor(at)})`,
      });
      return [];
    }
    const { change, ci95 } = differenceInterval(eb, ea);
    return [quantityRow(job, quantity, { before: eb.value, after: ea.value, n }, change, ci95, 'order-statistics')];
  });
}

function histogramEstimate(measure: HistogramMeasure): (Estimate & { n: number }) | undefined {
  const histogram = decodeHistogram(measure.histogram);
  const n = histogram.totalCount;
  const ranks = percentileRankInterval(n, measure.percentile);
  if (!ranks) return undefined;
  const at = (rank: number) => histogram.getValueAtPercentile((100 * rank) / n) / 1000;
  return { value: histogram.getValueAtPercentile(measure.percentile) / 1000, ci95: [at(ranks[0]), at(ranks[1])], n };
}

/** The quantities of one measure present in both runs. */
function compareMeasure(job: RunJob, before: Measure, after: Measure, notCompared: NotCompared[]): ComparedQuantity[] {
  if (before.kind === 'samples' && after.kind === 'samples') return compareSamples(job, before, after, notCompared);
  if (before.kind === 'share' && after.kind === 'share') {
    const [b, a] = [before, after].map((m) => ({ value: m.count / m.of, ci95: wilsonInterval(m.count, m.of) }));
    const { change, ci95 } = differenceInterval(b, a);
    const values = { before: b.value, after: a.value, n: { before: before.of, after: after.of } };
    return [quantityRow(job, before.key, values, change, ci95, 'newcombe')];
  }
  if (before.kind === 'histogram' && after.kind === 'histogram') {
    const [b, a] = [histogramEstimate(before), histogramEstimate(after)];
    if (!b || !a) {
      const counts = `${decodeHistogram(before.histogram).totalCount} before, ${decodeHistogram(after.histogram).totalCount} after`;
      notCompared.push({
        ...whereOf(job),
        quantity: before.key,
        reason: `too few requests for an interval (${counts})`,
      });
      return [];
    }
    const { change, ci95 } = differenceInterval(b, a);
    const values = { before: b.value, after: a.value, n: { before: b.n, after: a.n } };
    return [quantityRow(job, before.key, values, change, ci95, 'order-statistics')];
  }
  if ((before.kind === 'exact' || before.kind === 'single') && before.kind === after.kind) {
    const values = { before: before.value, after: after.value, n: null };
    return [quantityRow(job, before.key, values, after.value - before.value, null, 'none')];
  }
  return [];
}

const quantitiesOf = (m: Measure): QuantityId[] =>
  m.kind === 'samples' ? [m.quantities.p50, m.quantities.p95] : [m.key as QuantityId];
const whereOf = (j: RunJob) => ({ region: j.region, target: j.target, probe: j.probe, variant: j.variant });

function failure(job: RunJob): string | undefined {
  if (job.unfinished)
    return `${job.unfinished.status === 'failed' ? 'no result' : 'not run'}: ${job.unfinished.reason}`;
  const error = job.result?.error;
  return error && !job.result?.ok ? `${error.code}: ${error.message}` : undefined;
}

function compareJob(before: RunJob, after: RunJob, quantities: ComparedQuantity[], notCompared: NotCompared[]): void {
  const sides = [
    { name: 'before', job: before },
    { name: 'after', job: after },
  ] as const;
  if (!before.result || !after.result) {
    const why = sides.flatMap(({ name, job }) => (job.result ? [] : [`${name}: ${failure(job)}`]));
    notCompared.push({ ...whereOf(after), reason: why.join('; ') });
    return;
  }
  const b = measuresOf(before.result);
  const a = measuresOf(after.result);
  // A job that failed measures little: say so once rather than per missing quantity.
  const failed = sides.flatMap(({ name, job }) => (failure(job) ? [`${name}: ${failure(job)}`] : []));
  if (failed.length > 0) notCompared.push({ ...whereOf(after), reason: `partly measured (${failed.join('; ')})` });
  for (const [key, measure] of b) {
    const other = a.get(key);
    if (!other) {
      if (failed.length === 0)
        for (const quantity of quantitiesOf(measure))
          notCompared.push({ ...whereOf(after), quantity, reason: 'measured only before' });
      continue;
    }
    quantities.push(...compareMeasure(after, measure, other, notCompared));
  }
  if (failed.length === 0)
    for (const [key, measure] of a)
      if (!b.has(key))
        for (const quantity of quantitiesOf(measure))
          notCompared.push({ ...whereOf(after), quantity, reason: 'measured only after' });
}

type ReuseResult = ResultOf<'reuse'>;

/** median(new) − median(reused) per region and target, where both runs have both modes. */
function compareCosts(pairs: { before: RunJob; after: RunJob }[]): ComparedQuantity[] {
  const places = new Map<string, Partial<Record<'reused' | 'new', { before: ReuseResult; after: ReuseResult }>>>();
  for (const { before, after } of pairs) {
    if (before.result?.probe !== 'reuse' || after.result?.probe !== 'reuse') continue;
    const mode = after.result.variant.mode;
    if (mode === 'cold') continue;
    const key = `${after.region}\u0000${after.target}`;
    places.set(key, { ...places.get(key), [mode]: { before: before.result, after: after.result } });
  }
  const rows: ComparedQuantity[] = [];
  for (const { reused, new: fresh } of places.values()) {
    if (!reused || !fresh) continue;
    const totals = (r: ReuseResult) => answeredPhase(r.details?.samples ?? [], 'total');
    const groups = [reused.before, fresh.before, reused.after, fresh.after].map(totals);
    if (groups.some((g) => g.length < MIN_COST_SAMPLES)) continue;
    const { estimate, ci95 } = bootstrap(
      groups,
      ([rb, nb, ra, na]) => {
        const [mrb, mnb, mra, mna] = [rb, nb, ra, na].map((g) => percentile(g, 50));
        return [mna - mra - (mnb - mrb), mra - mrb, mna - mnb];
      },
      COMPARISON_RESAMPLES,
      COMPARISON_SEED,
    );
    const [change, reusedChange, newChange] = estimate;
    const [mrb, mnb, mra, mna] = groups.map((g) => percentile(Float64Array.from(g).sort(), 50));
    // The cost falls when new connections get cheaper and when reused requests get slower: the
    // median that moved more says which.
    const worse = Math.abs(reusedChange) > Math.abs(newChange) ? reusedChange > 0 : newChange > 0;
    const job = { region: reused.after.region, target: reused.after.target, probe: 'reuse' as const };
    rows.push(
      quantityRow(
        { ...job, variant: { scheme: reused.after.variant.scheme } },
        'new_connection_cost',
        { before: mnb - mrb, after: mna - mra, n: null },
        change,
        ci95[0],
        'bootstrap',
        worse,
      ),
    );
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

export function compareRuns(
  before: RunReport,
  after: RunReport,
  sources: { before: string; after: string } = { before: 'redis', after: 'redis' },
): RunComparison {
  const { pairs, onlyBefore, onlyAfter } = pairJobs(jobsOf(before), jobsOf(after));
  const quantities: ComparedQuantity[] = [];
  const notCompared: NotCompared[] = [];
  for (const pair of pairs) compareJob(pair.before, pair.after, quantities, notCompared);
  quantities.push(...compareCosts(pairs));
  for (const [side, jobs] of [
    ['before', onlyBefore],
    ['after', onlyAfter],
  ] as const)
    for (const job of jobs) notCompared.push({ ...whereOf(job), reason: `only in the ${side} run` });
  quantities.sort(byPlace);
  notCompared.sort(byPlace);
  const findings = findingChanges(before, after);
  const count = (verdict: ComparedQuantity['verdict']) => quantities.filter((q) => q.verdict === verdict).length;
  return {
    schema: COMPARISON_SCHEMA,
    before: comparedRun(before, sources.before),
    after: comparedRun(after, sources.after),
    method: { confidence: 0.95, resamples: COMPARISON_RESAMPLES, seed: COMPARISON_SEED },
    summary: {
      regressed: count('regressed'),
      improved: count('improved'),
      unchanged: count('unchanged'),
      findingsAppeared: findings.filter((f) => f.change === 'appeared').length,
      findingsDisappeared: findings.filter((f) => f.change === 'disappeared').length,
    },
    quantities,
    findings,
    differences: differencesOf(before, after, pairs, onlyBefore, onlyAfter),
    notCompared,
  };
}
