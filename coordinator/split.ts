// Splits a plan into jobs: one per (region, target, experiment variant). Ids are derived from
// what the job is, so splitting the same run twice yields the same ids and adds nothing twice.
import { createHash, randomBytes } from 'node:crypto';
import { JOB_SCHEMA, type JobPayload } from '../contracts/job.js';
import { PLAN_LIMITS } from '../contracts/limits.js';
import { covers, type Plan } from '../contracts/plan.js';
import { PROBES, shardSpecOf } from '../contracts/probes/index.js';
import { BadInputError } from '../common/bad-input.js';
import { plural, thousands } from '../common/plural.js';
import { labParamsExperimentsOf, labTargetsOf } from './lab-targets.js';
import type { LoadedPlan } from './loaded-plan.js';

/** A run would make more jobs than its limit allows. */
export class TooManyJobsError extends BadInputError {
  override name = 'TooManyJobsError';
}

/** How many jobs a run of the plan makes, and from what: counted, not made. */
export interface JobCount {
  total: number;
  regions: number;
  perRegion: number;
  /** Per experiment (in plan order): the targets it runs on and the jobs they make in one region. */
  experiments: { index: number; probe: string; targets: number; jobs: number }[];
}

/** The jobs `splitPlan` would make, by arithmetic: regions x the variants of each experiment on
 * each of its targets x the workers each is spread over. */
export function countJobs(plan: Plan): JobCount {
  const experiments = plan.experiments.map(({ targets: only, probe, ...params }, index) => {
    const targets = plan.targets.filter((t) => covers(only, t));
    const perVariant = shardSpecOf(probe)?.of(params).count ?? 1;
    const jobs = targets.reduce(
      (n, target) => n + PROBES[probe].variants(params as never, target).length * perVariant,
      0,
    );
    return { index, probe, targets: targets.length, jobs };
  });
  const perRegion = experiments.reduce((n, e) => n + e.jobs, 0);
  return { total: plan.regions.length * perRegion, regions: plan.regions.length, perRegion, experiments };
}

/** "1,000,000 jobs per run, over the limit of 10,000 ...: 50 regions x 20,000 jobs per region; the most from experiments[0] (drain): 100 targets x 4 variants = 400, ..." */
export function tooManyJobsMessage(jobs: JobCount, limit: number): string {
  const largest = [...jobs.experiments].sort((a, b) => b.jobs - a.jobs || a.index - b.index).slice(0, 3);
  const rest = jobs.experiments.length - largest.length;
  const from = largest
    .map((e) => {
      const variants = e.targets > 0 ? e.jobs / e.targets : 0;
      const per = Number.isInteger(variants) ? ` x ${plural(variants, 'variant')}` : '';
      return `experiments[${e.index}] (${e.probe}): ${plural(e.targets, 'target')}${per} = ${thousands(e.jobs)}`;
    })
    .join(', ');
  return (
    `${plural(jobs.total, 'job')} per run, over the limit of ${thousands(limit)} (--max-jobs or PROBEFLEET_MAX_JOBS raise it): ` +
    `${plural(jobs.regions, 'region')} x ${plural(jobs.perRegion, 'job')} per region; the most from ${from}${rest > 0 ? ` and ${rest} more` : ''}`
  );
}

/** JSON with sorted keys, so equal objects hash equally. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

function shortHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 10);
}

/** What follows the target in a job id (`<run>.<region>.<target>.<this>`, no ":", never an
 * integer): `<probe>-<variant values>-<hash of params and variant>`, the same in every region and run. */
function jobIdTail(probe: string, params: Record<string, unknown>, variant: Record<string, unknown>): string {
  const readable = Object.values(variant)
    .map(String)
    .join('-')
    .replace(/[^A-Za-z0-9_-]/g, '_');
  return `${probe}-${readable}-${shortHash({ params, variant })}`;
}

/** Throws TooManyJobsError when a run of the plan would make more jobs than its limit (say, after --regions). */
export function checkJobCount({ plan, file, maxJobs = PLAN_LIMITS.jobsPerRun, experimentsAt: at }: LoadedPlan): void {
  const counted = countJobs(plan);
  const where = at ? `${file}:${at.line}:${at.column}: experiments` : file;
  if (counted.total > maxJobs) throw new TooManyJobsError(`${where}: ${tooManyJobsMessage(counted, maxJobs)}`);
}

/** The run's jobs; refuses (TooManyJobsError) before making any when they would be more than the plan's limit. */
export function splitPlan(loaded: LoadedPlan, runId: string): JobPayload[] {
  checkJobCount(loaded);
  const { plan, tls } = loaded;
  const unresolved = labTargetsOf(loaded);
  // Entry points resolve lab URLs (withLabTargets) before splitting; a job never carries one.
  if (unresolved.length > 0) throw new Error(`lab targets not resolved before splitting: ${unresolved.join(', ')}`);
  const unresolvedParams = labParamsExperimentsOf(loaded);
  if (unresolvedParams.length > 0)
    throw new Error(`lab servers in parameters not resolved before splitting: ${unresolvedParams.join(', ')}`);
  // Each experiment × target × variant hashed once (a tenth of a 100,000-job submit's CPU when
  // hashed per job), then made a job in every region.
  const templates = plan.experiments.flatMap(({ targets: only, probe, ...params }) =>
    plan.targets
      .filter((t) => covers(only, t))
      .flatMap((target) =>
        PROBES[probe].variants(params as never, target).map((variant) => ({
          tail: `${target.name}.${jobIdTail(probe, params, variant)}`,
          target: {
            name: target.name,
            url: target.url,
            ...(target.headers ? { headers: target.headers } : {}),
            ...(tls[target.name] ? { tls: tls[target.name] } : {}),
            ...(target.method ? { method: target.method } : {}),
            // The loader read a body file into its text (coordinator/plan-loader.ts).
            ...(typeof target.body === 'string' ? { body: target.body } : {}),
            ...(target.checks ? { checks: target.checks } : {}),
            ...(target.proxy ? { proxy: target.proxy } : {}),
            ...(target.labels ? { labels: target.labels } : {}),
            ...(target.dns ? { dns: target.dns } : {}),
            ...(target.ipFamily !== undefined ? { ipFamily: target.ipFamily } : {}),
            ...(target.dualStackOf ? { dualStackOf: target.dualStackOf } : {}),
          },
          probe,
          params,
          variant,
        })),
      ),
  );
  const jobs = new Map<string, JobPayload>();
  for (const region of plan.regions) {
    for (const { tail, target, probe, params, variant } of templates) {
      const jobId = `${runId}.${region}.${tail}`;
      const job = {
        schema: JOB_SCHEMA,
        jobId,
        runId,
        plan: plan.name,
        region,
        target,
        probe,
        params,
        variant,
        timeLimitMs: plan.jobTimeoutSeconds * 1000,
      } as JobPayload;
      for (const shard of shardsOf(job)) jobs.set(shard.jobId, shard);
    }
  }
  return [...jobs.values()];
}

/**
 * The job, or the shards it is spread over (the load probe's `workers`): shard i has the id
 * `<job id>-shard-<i>` (no "." added: a job id's last three parts name it in a region), its share
 * of the parameters, and the job's id as `partOf`, which the merged result takes.
 */
function shardsOf(job: JobPayload): JobPayload[] {
  const spec = shardSpecOf(job.probe);
  const { count, joinSeconds } = spec?.of(job.params) ?? { count: 1, joinSeconds: 0 };
  if (!spec || count === 1) return [job];
  return Array.from(
    { length: count },
    (_, index) =>
      ({
        ...job,
        jobId: `${job.jobId}-shard-${index}`,
        params: spec.share(job.params, index, count),
        shard: { partOf: job.jobId, index, count, joinMs: Math.round(joinSeconds * 1000) },
      }) as JobPayload,
  );
}

/** `<plan>-<UTC time>[-<suffix>]`: sortable, readable, and valid in a job id. */
export function runIdFor(planName: string, at: Date, suffix?: string): string {
  const stamp = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'z')
    .toLowerCase();
  return `${planName}-${stamp}${suffix ? `-${suffix}` : ''}`;
}

/** The id of a run started now by hand; the random suffix keeps two started in the same second apart. */
export function newRunId(planName: string): string {
  return runIdFor(planName, new Date(), randomBytes(2).toString('hex'));
}
