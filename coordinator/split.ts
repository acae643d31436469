// Splits a plan into jobs: one per (region, target, experiment variant). Ids are derived from
// what the job is, so splitting the same run twice yields the same ids and adds nothing twice.
import { createHash, randomBytes } from 'node:crypto';
import { JOB_SCHEMA, type JobPayload } from '../contracts/job.js';
import { PROBES } from '../contracts/probes/index.js';
import { labTargetsOf } from './lab-targets.js';
import type { LoadedPlan } from './plan-loader.js';

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

/** `<run>.<region>.<target>.<probe>-<variant values>-<hash of params and variant>`: no ":", never an integer. */
export function jobIdFor(
  runId: string,
  region: string,
  target: string,
  probe: string,
  params: Record<string, unknown>,
  variant: Record<string, unknown>,
): string {
  const readable = Object.values(variant)
    .map(String)
    .join('-')
    .replace(/[^A-Za-z0-9_-]/g, '_');
  return `${runId}.${region}.${target}.${probe}-${readable}-${shortHash({ params, variant })}`;
}

export function splitPlan(loaded: LoadedPlan, runId: string): JobPayload[] {
  const { plan, tls } = loaded;
  const unresolved = labTargetsOf(loaded);
  // Entry points resolve lab URLs (withLabTargets) before splitting; a job never carries one.
  if (unresolved.length > 0) throw new Error(`lab targets not resolved before splitting: ${unresolved.join(', ')}`);
  const jobs = new Map<string, JobPayload>();
  for (const region of plan.regions) {
    for (const { targets: only, probe, ...params } of plan.experiments) {
      for (const target of plan.targets.filter((t) => !only || only.includes(t.name))) {
        for (const variant of PROBES[probe].variants(params as never, target)) {
          const jobId = jobIdFor(runId, region, target.name, probe, params, variant);
          jobs.set(jobId, {
            schema: JOB_SCHEMA,
            jobId,
            runId,
            plan: plan.name,
            region,
            target: {
              name: target.name,
              url: target.url,
              ...(target.headers ? { headers: target.headers } : {}),
              ...(tls[target.name] ? { tls: tls[target.name] } : {}),
            },
            probe,
            params,
            variant,
            timeLimitMs: plan.jobTimeoutSeconds * 1000,
          } as JobPayload);
        }
      }
    }
  }
  return [...jobs.values()];
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
