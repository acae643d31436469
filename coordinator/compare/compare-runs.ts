// Compares a run with its baseline, the plan's earlier runs. Jobs are paired by what they are
// (region, target, probe, variant and parameters: the job id without its run id), or, when the
// parameters changed, by region, target, probe and variant alone (the change is named). Each
// quantity of the new run, with its own 95% interval, is judged against the same quantity's
// values in the earlier runs (rules.ts); the new-connection cost is compared per region and
// target; findings that appeared or disappeared since the newest earlier run are listed; and
// whatever the runs do not share is named rather than silently dropped.
//
// Runs are read a page of results at a time and never held whole: the new run as each job's
// values, each earlier run as the numbers its paired jobs add to the baseline (EarlierRun), so a
// run of 100,000 jobs compares with its baseline in bounded memory. Such a run lists only what
// regressed or improved, and that and what was not compared only up to a bound (FirstInOrder);
// the summary counts every verdict.
import {
  COMPARISON_SCHEMA,
  LISTED,
  LISTED_EVERY_QUANTITY_UP_TO_JOBS,
  type ComparedQuantity,
  type ComparedRun,
  type Difference,
  type FindingChange,
  type NotCompared,
  type RunComparison,
} from '../../contracts/comparison.js';
import { QUANTITIES, type QuantityId } from '../../contracts/quantities.js';
import type { Finding } from '../../contracts/findings.js';
import type { Experiment, Plan, Target } from '../../contracts/plan.js';
import { PROBES, type ProbeKind } from '../../contracts/probes/index.js';
import type { ProbeResult, RunReport, RunReportHead, UnfinishedJob } from '../../contracts/result.js';
import { groupBy } from '../../common/group-by.js';
import { median } from '../../common/stats.js';
import {
  COMPARISON_RESAMPLES,
  COMPARISON_SEED,
  costOf,
  costOfSummaries,
  reuseTotals,
  totalsSummary,
  valuesOfResult,
  type RunValue,
} from '../run-quantities.js';
import { type RunParts, partsOf } from '../run-parts.js';
import { BASELINE_RULE, baselineOf, cpuWaitReach, judge, minChangeFor, withCpuWait } from './rules.js';

type Variant = Record<string, string | number | boolean>;

/** One job of a run as the comparison keeps it: what it is and what it measured, not its result. */
interface RunJob {
  /** The job id without the run id: `<region>.<target>.<probe>-<variant>-<hash of parameters>`. */
  key: string;
  region: string;
  target: string;
  probe: ProbeKind;
  variant: Variant;
  /** Its quantities; absent for a job without a result. */
  values?: Map<QuantityId, RunValue | string>;
  /** Why it failed or has no result, if so. */
  failure?: string;
  cpuWaitMs: number;
  /** A `reused` or `new` reuse job's answered per-request totals: its side of the new-connection cost. */
  totals?: number[];
}

/** A job of the new run as the comparison keeps it: its values are in NewRunValues. */
type AfterJob = Omit<RunJob, 'values'> & {
  /** The quantities it has, in order; absent for a job without a result. */
  measured?: readonly QuantityId[];
  /** Why each quantity without a value has none (too few samples). */
  reasons?: ReadonlyMap<QuantityId, string>;
};

/** Region, target and names of run ids contain no "."; run ids may. */
const jobKey = (jobId: string) => jobId.split('.').slice(-3).join('.');
const variantKey = (variant: Variant) => JSON.stringify(Object.entries(variant).sort(([a], [b]) => a.localeCompare(b)));
const placeKey = (j: Pick<RunJob, 'region' | 'target' | 'probe' | 'variant'>) =>
  [j.region, j.target, j.probe, variantKey(j.variant)].join('\u0000');
const regionTarget = (j: Pick<RunJob, 'region' | 'target'>) => `${j.region}\u0000${j.target}`;
export const variantText = (variant: Variant) => Object.values(variant).join(' ');

function jobOfResult(r: ProbeResult): RunJob {
  const costSide = r.probe === 'reuse' && r.variant.mode !== 'cold';
  return {
    key: jobKey(r.jobId),
    region: r.region,
    target: r.target,
    probe: r.probe,
    variant: r.variant as Variant,
    values: valuesOfResult(r),
    failure: r.error && !r.ok ? `${r.error.code}: ${r.error.message}` : undefined,
    cpuWaitMs: r.worker.cpuWaitMs ?? 0,
    totals: costSide ? reuseTotals(r) : undefined,
  };
}

const jobOfUnfinished = (u: UnfinishedJob): RunJob => ({
  key: jobKey(u.jobId),
  region: u.region,
  target: u.target,
  probe: u.probe,
  variant: u.variant,
  failure: `${u.status === 'failed' ? 'no result' : 'not run'}: ${u.reason}`,
  cpuWaitMs: 0,
});

/** What a run is besides its jobs: its head, the regions with results, the regions with any job,
 * and where (region and target) it has a result. */
interface RunFacts {
  head: RunReportHead;
  regionsWithResults: Set<string>;
  regionsWithJobs: Set<string>;
  measuredAt: Set<string>;
}

/** Reads a run's jobs a page at a time, handing each to `take`, then its unfinished jobs. */
async function readJobs(run: RunParts, take: (job: RunJob) => void): Promise<RunFacts> {
  const facts: RunFacts = {
    head: run.head,
    regionsWithResults: new Set(),
    regionsWithJobs: new Set(),
    measuredAt: new Set(),
  };
  for await (const page of run.pages())
    for (const result of page) {
      const job = jobOfResult(result);
      facts.regionsWithResults.add(job.region);
      facts.regionsWithJobs.add(job.region);
      facts.measuredAt.add(regionTarget(job));
      take(job);
    }
  for (const unfinished of run.head.unfinishedJobs) {
    const job = jobOfUnfinished(unfinished);
    facts.regionsWithJobs.add(job.region);
    take(job);
  }
  return facts;
}

const INTERVALS = ['bootstrap', 'wilson', 'order-statistics', 'none'] as const satisfies RunValue['interval'][];

/**
 * The new run's values, a slot each: a job's quantities that have a value, then, for a reuse job
 * in `reused` or `new` mode, its totals (what earlier runs add to its new-connection cost). Numbers
 * in arrays of numbers, and what repeats from job to job (names, variants, reasons, lists of
 * quantities) once: a run of 100,000 jobs holds ~1 KB a job, where its value maps took ~3 KB.
 */
class NewRunValues {
  /** Where job j's slots start: job j has slots start[j] to start[j + 1] − 1. */
  readonly start: number[] = [0];
  readonly numeric: (readonly QuantityId[])[] = [];
  private readonly value: number[] = [];
  private readonly low: number[] = [];
  private readonly high: number[] = [];
  private readonly n: number[] = [];
  private readonly interval: number[] = [];
  private readonly once = new Map<string, unknown>();

  /** The same value for the same key, the first one given. */
  private shared<T>(key: string, value: T): T {
    const seen = this.once.get(key);
    if (seen !== undefined) return seen as T;
    this.once.set(key, value);
    return value;
  }

  /** Keeps the job's values here; returns the job without them. */
  add(job: RunJob): AfterJob {
    const { values } = job;
    const numeric: QuantityId[] = [];
    const reasons = new Map<QuantityId, string>();
    for (const [quantity, v] of values ?? []) {
      if (typeof v === 'string') {
        reasons.set(quantity, this.shared(`reason\u0000${v}`, v));
        continue;
      }
      numeric.push(quantity);
      this.value.push(v.value);
      this.low.push(v.ci95?.[0] ?? Number.NaN);
      this.high.push(v.ci95?.[1] ?? Number.NaN);
      this.n.push(v.n ?? Number.NaN);
      this.interval.push(INTERVALS.indexOf(v.interval));
    }
    if (job.totals) for (const column of [this.value, this.low, this.high, this.n, this.interval]) column.push(0);
    this.start.push(this.value.length);
    this.numeric.push(this.shared(`numeric\u0000${numeric.join()}`, numeric));
    const measured = values && [...values.keys()];
    // Every property in one order, present or undefined: built from a spread with optional
    // members, each job's object had a hidden class of its own (~400 B a job, 40 MB at 100,000).
    return {
      key: job.key,
      region: this.shared(`name\u0000${job.region}`, job.region),
      target: this.shared(`name\u0000${job.target}`, job.target),
      probe: this.shared(`name\u0000${job.probe}`, job.probe),
      variant: this.shared(`variant\u0000${variantKey(job.variant)}`, job.variant),
      failure: job.failure,
      cpuWaitMs: job.cpuWaitMs,
      totals: job.totals?.slice(),
      measured: measured && this.shared(`measured\u0000${measured.join()}`, measured),
      reasons:
        reasons.size > 0 ? this.shared(`reasons\u0000${[...reasons].flat().join('\u0000')}`, reasons) : undefined,
    };
  }

  get count() {
    return this.start[this.start.length - 1]!;
  }

  /** The slot of job j's totals (a reuse job's). */
  totalsSlot(j: number) {
    return this.start[j + 1]! - 1;
  }

  /** Job j's k-th quantity with a value. */
  valueAt(j: number, k: number): RunValue {
    const at = this.start[j]! + k;
    const [low, high, n] = [this.low[at]!, this.high[at]!, this.n[at]!];
    return {
      value: this.value[at]!,
      ci95: Number.isNaN(low) ? null : [low, high],
      n: Number.isNaN(n) ? null : n,
      interval: INTERVALS[this.interval[at]!]!,
    };
  }
}

/** A sample count EarlierRun does not know. */
const NO_COUNT = 0xffff_ffff;

/**
 * What one earlier run adds to the baseline of the new run's jobs, by job index and slot: a
 * quantity's value and its sample count (a reuse job's totals median and count); a NaN value where
 * the run did not measure it. It keeps the count (4 bytes) rather than the CPU-wait reach (8);
 * valueAt works the reach out from the count and the job's wait (rules.ts cpuWaitReach).
 */
class EarlierRun {
  readonly paired: Uint8Array;
  readonly hasResult: Uint8Array;
  readonly cpuWaitMs: Float64Array;
  readonly values: Float64Array;
  /** Sample counts; NO_COUNT where unknown. */
  readonly counts: Uint32Array;
  readonly failures = new Map<number, string>();
  /** The quantities the earlier job measured that the new run's job did not. */
  readonly onlyBefore = new Map<number, QuantityId[]>();
  constructor(
    private readonly slots: NewRunValues,
    jobs: number,
  ) {
    this.paired = new Uint8Array(jobs);
    this.hasResult = new Uint8Array(jobs);
    this.cpuWaitMs = new Float64Array(jobs);
    this.values = new Float64Array(slots.count).fill(Number.NaN);
    this.counts = new Uint32Array(slots.count).fill(NO_COUNT);
  }

  record(j: number, job: RunJob, after: AfterJob): void {
    // A job twice in one run (a hand-merged run file) counts once: its first record.
    if (this.paired[j]) return;
    this.paired[j] = 1;
    this.cpuWaitMs[j] = job.cpuWaitMs;
    if (job.failure) this.failures.set(j, job.failure);
    if (!job.values) return;
    this.hasResult[j] = 1;
    const first = this.slots.start[j]!;
    for (const [k, quantity] of this.slots.numeric[j]!.entries()) {
      const v = job.values.get(quantity);
      if (!v || typeof v === 'string') continue;
      this.values[first + k] = v.value;
      this.counts[first + k] = v.n ?? NO_COUNT;
    }
    if (after.totals && job.totals) {
      const { median: m, count } = totalsSummary(job.totals);
      const slot = this.slots.totalsSlot(j);
      this.values[slot] = m;
      this.counts[slot] = count;
    }
    const lacking = [...job.values.keys()].filter((q) => !after.measured?.includes(q));
    if (lacking.length > 0) this.onlyBefore.set(j, lacking);
  }

  /** Job j's `quantity` at its k-th slot, if this run measured it. */
  valueAt(j: number, k: number, quantity: QuantityId): { value: number; reach: number } | undefined {
    const at = this.slots.start[j]! + k;
    const [value, n] = [this.values[at]!, this.counts[at]!];
    return Number.isNaN(value)
      ? undefined
      : { value, reach: cpuWaitReach(quantity, n === NO_COUNT ? null : n, this.cpuWaitMs[j]!) };
  }

  totalsAt(j: number): { median: number; count: number } | undefined {
    const at = this.slots.totalsSlot(j);
    const count = this.counts[at]!;
    return count === NO_COUNT ? undefined : { median: this.values[at]!, count };
  }
}

/** How an earlier run's jobs paired with the new run's: by job key, then what is left by place
 * when each side has exactly one job there. */
interface Pairing {
  facts: RunFacts;
  run: EarlierRun;
  /** Pairs whose parameters differ (paired by place): the before job and the new run's job index. */
  byPlace: { before: RunJob; after: number }[];
  onlyBefore: RunJob[];
  /** The new run's jobs this run has no counterpart for. */
  onlyAfter: number[];
}

async function pairEarlierRun(
  parts: RunParts,
  afterJobs: readonly AfterJob[],
  slots: NewRunValues,
  afterIndex: Map<string, number>,
) {
  const run = new EarlierRun(slots, afterJobs.length);
  const unpaired: RunJob[] = [];
  const facts = await readJobs(parts, (job) => {
    const j = afterIndex.get(job.key);
    if (j === undefined) unpaired.push(job);
    else run.record(j, job, afterJobs[j]!);
  });
  const restAfter = afterJobs.flatMap((_, j) => (run.paired[j] ? [] : [j]));
  const afterPlaces = groupBy(restAfter, (j) => placeKey(afterJobs[j]!));
  const byPlace: Pairing['byPlace'] = [];
  const onlyBefore: RunJob[] = [];
  for (const [place, jobs] of groupBy(unpaired, placeKey)) {
    const other = afterPlaces.get(place);
    if (jobs.length === 1 && other?.length === 1) {
      run.record(other[0]!, jobs[0]!, afterJobs[other[0]!]!);
      byPlace.push({ before: jobs[0]!, after: other[0]! });
      afterPlaces.delete(place);
    } else onlyBefore.push(...jobs);
  }
  return { facts, run, byPlace, onlyBefore, onlyAfter: [...afterPlaces.values()].flat() } satisfies Pairing;
}

const relative = (change: number, center: number) => (center === 0 ? null : change / Math.abs(center));

const whereOf = (j: Pick<RunJob, 'region' | 'target' | 'probe' | 'variant'>) => ({
  region: j.region,
  target: j.target,
  probe: j.probe,
  variant: j.variant,
});

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

/** The quantities of the new run's job j against the same job in the earlier runs (newest first). */
function compareJob(
  job: AfterJob,
  j: number,
  slots: NewRunValues,
  earlier: readonly EarlierRun[],
  judged: (compared: Compared) => void,
  notCompared: FirstInOrder<NotCompared>,
): void {
  const where = whereOf(job);
  if (!job.measured) {
    notCompared.add({ ...where, reason: `after: ${job.failure}` });
    return;
  }
  const newest = earlier[0]!;
  const newestFailure = newest.paired[j] ? newest.failures.get(j) : undefined;
  const failed = [
    ...(job.failure ? [`after: ${job.failure}`] : []),
    ...(newestFailure ? [`before: ${newestFailure}`] : []),
  ];
  // A job that failed measures little: say so once rather than per missing quantity.
  if (failed.length > 0) notCompared.add({ ...where, reason: `partly measured (${failed.join('; ')})` });
  let k = 0;
  for (const quantity of job.measured) {
    const reason = job.reasons?.get(quantity);
    if (reason !== undefined) {
      notCompared.add({ ...where, quantity, reason });
      continue;
    }
    const value = slots.valueAt(j, k);
    const measured = earlier.flatMap((run) => {
      const v = run.valueAt(j, k, quantity);
      return v ? [v] : [];
    });
    k++;
    if (measured.length > 0)
      judged({
        where,
        quantity,
        after: value,
        earlier: measured.map((m) => m.value),
        waitReach: { after: cpuWaitReach(quantity, value.n, job.cpuWaitMs), earlier: measured.map((m) => m.reach) },
      });
    else if (failed.length === 0) notCompared.add({ ...where, quantity, reason: 'measured only after' });
  }
  if (failed.length === 0 && newest.hasResult[j])
    for (const quantity of newest.onlyBefore.get(j) ?? [])
      notCompared.add({ ...where, quantity, reason: 'measured only before' });
}

/** The new-connection cost is a difference of two medians: either job's wait can move it. */
const costWaitReach = (waitMs: number, samples: number) => cpuWaitReach('new_connection_cost', samples, waitMs);

/** The new-connection cost per region and target where the new run has both reuse modes; its
 * bootstrap interval made only where `withInterval` says (the costliest part of a comparison). */
function compareCosts(
  afterJobs: readonly AfterJob[],
  earlier: readonly EarlierRun[],
  judged: (compared: Compared, withInterval: () => RunValue) => void,
): void {
  const places = new Map<string, Partial<Record<'reused' | 'new', number>>>();
  for (const [j, job] of afterJobs.entries()) {
    if (!job.totals || !job.measured) continue;
    const key = `${job.region}\u0000${job.target}\u0000${job.variant.scheme}`;
    places.set(key, { ...places.get(key), [job.variant.mode as 'reused' | 'new']: j });
  }
  for (const { reused: r, new: n } of places.values()) {
    if (r === undefined || n === undefined) continue;
    const [reused, fresh] = [afterJobs[r]!, afterJobs[n]!];
    const after = costOf(reused.totals!, fresh.totals!, false);
    if (!after) continue;
    const costs = earlier.flatMap((run) => {
      const [tr, tn] = [run.totalsAt(r), run.totalsAt(n)];
      const cost = tr && tn ? costOfSummaries(tr, tn) : undefined;
      return cost ? [{ ...cost, reach: costWaitReach(run.cpuWaitMs[r]! + run.cpuWaitMs[n]!, cost.samples) }] : [];
    });
    if (costs.length === 0) continue;
    // The cost falls when new connections get cheaper and when reused requests get slower: the
    // median that moved more from its baseline says which.
    const reusedMove = after.reusedMedian - median(costs.map((c) => c.reusedMedian));
    const newMove = after.newMedian - median(costs.map((c) => c.newMedian));
    judged(
      {
        where: {
          region: reused.region,
          target: reused.target,
          probe: 'reuse',
          variant: { scheme: reused.variant.scheme! },
        },
        quantity: 'new_connection_cost',
        after: after.value,
        earlier: costs.map((c) => c.value),
        worse: Math.abs(reusedMove) > Math.abs(newMove) ? reusedMove > 0 : newMove > 0,
        waitReach: {
          after: costWaitReach(reused.cpuWaitMs + fresh.cpuWaitMs, after.samples),
          earlier: costs.map((c) => c.reach),
        },
      },
      () => costOf(reused.totals!, fresh.totals!, true)!.value,
    );
  }
}

const findingKey = (f: Finding) => [f.code, f.region, f.target, f.probe].join('\u0000');

/** Findings that appeared or disappeared at places (region and target) both runs measured. */
function findingChanges(before: RunFacts, after: RunFacts): FindingChange[] {
  const shared = (f: Finding) => before.measuredAt.has(regionTarget(f)) && after.measuredAt.has(regionTarget(f));
  const keys = (r: RunFacts) => new Set(r.head.findings.map(findingKey));
  const [kb, ka] = [keys(before), keys(after)];
  const once = (findings: Finding[]) => [...new Map(findings.map((f) => [findingKey(f), f])).values()];
  return [
    ...once(after.head.findings.filter((f) => shared(f) && !kb.has(findingKey(f)))).map((f) => ({
      ...f,
      change: 'appeared' as const,
    })),
    ...once(before.head.findings.filter((f) => shared(f) && !ka.has(findingKey(f)))).map((f) => ({
      ...f,
      change: 'disappeared' as const,
    })),
  ];
}

/** The experiment of the plan that made this job (the one whose variants for the target include it). */
function experimentOf(plan: Plan, job: Pick<RunJob, 'target' | 'probe' | 'variant'>): Experiment | undefined {
  const target = plan.targets.find((t) => t.name === job.target);
  if (!target) return undefined;
  return plan.experiments.find(
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

/** What the new run and the newest earlier run do not share. */
function differencesOf(newest: Pairing, after: RunFacts, afterJobs: readonly AfterJob[]): Difference[] {
  const [before, now] = [newest.facts.head, after.head];
  const out: Difference[] = [];
  const both = <T>(b: T, a: T) => [b, a] as const;
  if (before.plan.name !== now.plan.name)
    out.push({ kind: 'plan', where: 'plan', before: before.plan.name, after: now.plan.name });
  if (before.mode !== now.mode) out.push({ kind: 'mode', where: 'mode', before: before.mode, after: now.mode });

  const [rb, ra] = both(newest.facts.regionsWithJobs, after.regionsWithJobs);
  for (const region of rb)
    if (!ra.has(region)) out.push({ kind: 'region', where: region, before: region, after: null });
  for (const region of ra)
    if (!rb.has(region)) out.push({ kind: 'region', where: region, before: null, after: region });

  // By name: a big run's plan has tens of thousands of targets.
  const [tb, ta] = both(before.plan.targets, now.plan.targets);
  const [byNameBefore, byNameAfter] = both(new Map(tb.map((t) => [t.name, t])), new Map(ta.map((t) => [t.name, t])));
  for (const t of tb) {
    const other = byNameAfter.get(t.name);
    if (!other) out.push({ kind: 'target', where: t.name, before: t.url, after: null });
    else {
      if (other.url !== t.url) out.push({ kind: 'target-url', where: t.name, before: t.url, after: other.url });
      if (targetSettings(t) !== targetSettings(other))
        out.push({ kind: 'target-settings', where: t.name, before: targetSettings(t), after: targetSettings(other) });
    }
  }
  for (const t of ta)
    if (!byNameBefore.has(t.name)) out.push({ kind: 'target', where: t.name, before: null, after: t.url });

  // Experiments on a target one run has and the other lacks, by probe and variant.
  const variantsAt = (jobs: Pick<RunJob, 'target' | 'probe' | 'variant'>[]) => {
    const map = new Map<string, Set<string>>();
    for (const j of jobs) {
      const where = `${j.target} ${j.probe}`;
      map.set(where, (map.get(where) ?? new Set()).add(variantText(j.variant) || j.probe));
    }
    return map;
  };
  const onShared = (j: Pick<RunJob, 'target' | 'region'>) =>
    byNameBefore.has(j.target) && byNameAfter.has(j.target) && rb.has(j.region) && ra.has(j.region);
  const onlyAfter = newest.onlyAfter.map((j) => afterJobs[j]!);
  const [vb, va] = both(variantsAt(newest.onlyBefore.filter(onShared)), variantsAt(onlyAfter.filter(onShared)));
  for (const where of new Set([...vb.keys(), ...va.keys()])) {
    const list = (s: Set<string> | undefined) => (s ? [...s].sort().join(', ') : null);
    out.push({ kind: 'experiment', where, before: list(vb.get(where)), after: list(va.get(where)) });
  }

  const seen = new Set<string>();
  for (const pair of newest.byPlace) {
    const job = afterJobs[pair.after]!;
    const [eb, ea] = both(experimentOf(before.plan, pair.before), experimentOf(now.plan, job));
    const where = `${job.target} ${job.probe}`;
    const difference = eb && ea ? parameterDifference(eb, ea, where) : undefined;
    const key = JSON.stringify(difference);
    if (difference && !seen.has(key)) {
      seen.add(key);
      out.push(difference);
    }
  }
  return out;
}

const comparedRun = (facts: RunFacts, source: string): ComparedRun => ({
  runId: facts.head.runId,
  plan: facts.head.plan.name,
  mode: facts.head.mode,
  startedAt: facts.head.startedAt,
  finishedAt: facts.head.finishedAt,
  regions: [...facts.regionsWithResults].sort(),
  source,
});

const PROBE_ORDER = new Map(Object.keys(PROBES).map((p, i) => [p, i]));
const QUANTITY_ORDER = new Map(Object.keys(QUANTITIES).map((q, i) => [q, i]));

/** Place order: region, target, probe (the probe list's order), variant; then the quantity list's order. */
function byPlace(a: ComparedQuantity | NotCompared, b: ComparedQuantity | NotCompared): number {
  return (
    a.region.localeCompare(b.region) ||
    a.target.localeCompare(b.target) ||
    PROBE_ORDER.get(a.probe)! - PROBE_ORDER.get(b.probe)! ||
    variantText(a.variant).localeCompare(variantText(b.variant)) ||
    (QUANTITY_ORDER.get(a.quantity ?? '') ?? -1) - (QUANTITY_ORDER.get(b.quantity ?? '') ?? -1)
  );
}

/** Where each run was read from: file names, or "redis". */
export interface ComparisonSources {
  baseline: string[];
  after: string;
}

/** Regressed before improved, then the largest relative change first (no relative change: first). */
export const worstFirst = (a: ComparedQuantity, b: ComparedQuantity) =>
  Number(b.verdict === 'regressed') - Number(a.verdict === 'regressed') ||
  Math.abs(b.relativeChange ?? Number.POSITIVE_INFINITY) - Math.abs(a.relativeChange ?? Number.POSITIVE_INFINITY);

/** The first `limit` of the items it is given in `order`, holding at most twice that many at once,
 * and how many it left out. */
class FirstInOrder<T> {
  private items: T[] = [];
  private left = 0;
  constructor(
    private readonly limit: number,
    private readonly order: (a: T, b: T) => number,
  ) {}
  add(item: T): void {
    this.items.push(item);
    if (this.items.length >= 2 * this.limit) this.trim();
  }
  private trim(): void {
    this.items.sort(this.order);
    if (this.items.length > this.limit) {
      this.left += this.items.length - this.limit;
      this.items.length = this.limit;
    }
  }
  /** The items kept, in `order`. */
  kept(): T[] {
    this.trim();
    return this.items;
  }
  get leftOut(): number {
    return this.left;
  }
}

const inParts = (run: RunReport | RunParts): RunParts => ('head' in run ? run : partsOf(run));

/**
 * The new run (`after`) against its baseline: the plan's earlier runs, newest first. Findings and
 * what the plans do not share are against the newest earlier run. A new run of more than
 * `listEveryUpTo` jobs lists only the quantities that regressed or improved.
 */
export async function compareRuns(
  baseline: readonly (RunReport | RunParts)[],
  after: RunReport | RunParts,
  sources?: ComparisonSources,
  listEveryUpTo = LISTED_EVERY_QUANTITY_UP_TO_JOBS,
): Promise<RunComparison> {
  if (baseline.length === 0) throw new RangeError('a comparison needs at least one earlier run');
  const slots = new NewRunValues();
  const afterJobs: AfterJob[] = [];
  const afterFacts = await readJobs(inParts(after), (job) => afterJobs.push(slots.add(job)));
  const afterIndex = new Map(afterJobs.map((job, j) => [job.key, j]));
  // One earlier run at a time, each read once; of those before the newest, only their numbers
  // and the facts their summaries name are kept (differences and findings are against the newest).
  const pairings: Pairing[] = [];
  for (const run of baseline) {
    const pairing = await pairEarlierRun(inParts(run), afterJobs, slots, afterIndex);
    pairings.push(
      pairings.length === 0
        ? pairing
        : {
            ...pairing,
            facts: { ...pairing.facts, measuredAt: new Set() },
            byPlace: [],
            onlyBefore: [],
            onlyAfter: [],
          },
    );
  }
  const earlier = pairings.map((p) => p.run);

  const listsEvery = afterJobs.length <= listEveryUpTo;
  const changed = new FirstInOrder<ComparedQuantity>(
    listsEvery ? Number.POSITIVE_INFINITY : LISTED.changed,
    worstFirst,
  );
  const unchanged: ComparedQuantity[] = [];
  const counts = { regressed: 0, improved: 0, unchanged: 0 };
  const judged = (compared: Compared, withInterval?: () => RunValue) => {
    let row = quantityRow(compared);
    // An interval that holds the value only brings it nearer the baseline, so a value judged
    // unchanged alone is unchanged with it: a run that lists only changes makes the (bootstrap)
    // interval only for those.
    if (withInterval && (listsEvery || row.verdict !== 'unchanged'))
      row = quantityRow({ ...compared, after: withInterval() });
    counts[row.verdict]++;
    if (row.verdict !== 'unchanged') changed.add(row);
    else if (listsEvery) unchanged.push(row);
  };
  const notCompared = new FirstInOrder<NotCompared>(
    listsEvery ? Number.POSITIVE_INFINITY : LISTED.notCompared,
    byPlace,
  );
  for (const [j, job] of afterJobs.entries()) {
    if (earlier.some((run) => run.paired[j])) compareJob(job, j, slots, earlier, judged, notCompared);
    else notCompared.add({ ...whereOf(job), reason: 'only in the after run' });
  }
  const [newest] = pairings as [Pairing];
  for (const job of newest.onlyBefore) notCompared.add({ ...whereOf(job), reason: 'only in the before run' });
  compareCosts(afterJobs, earlier, judged);
  const quantities = [...changed.kept(), ...unchanged].sort(byPlace);
  const findings = findingChanges(newest.facts, afterFacts);
  const baselineRuns = pairings.map((p, i) => comparedRun(p.facts, sources?.baseline[i] ?? 'redis'));
  return {
    schema: COMPARISON_SCHEMA,
    before: baselineRuns[0]!,
    baseline: baselineRuns,
    after: comparedRun(afterFacts, sources?.after ?? 'redis'),
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
      ...counts,
      findingsAppeared: findings.filter((f) => f.change === 'appeared').length,
      findingsDisappeared: findings.filter((f) => f.change === 'disappeared').length,
    },
    quantities,
    findings,
    differences: differencesOf(newest, afterFacts, afterJobs),
    notCompared: notCompared.kept(),
    omitted: {
      unchanged: listsEvery ? 0 : counts.unchanged,
      changed: changed.leftOut,
      notCompared: notCompared.leftOut,
    },
  };
}
