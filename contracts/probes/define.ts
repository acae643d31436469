import type { z } from 'zod';
import type { Demand, JobDemands } from '../limits.js';

/** What the plan, the splitter and the worker know about one probe kind. */
export interface ProbeContract<K extends string, P extends z.ZodObject, V extends z.ZodObject, D extends z.ZodType> {
  kind: K;
  summary: string;
  /** The experiment's parameters in a plan (besides `probe` and `targets`). */
  params: P;
  /** What tells one job of an experiment from another (e.g. `{mode: "new"}`); part of the job id. */
  variant: V;
  /** The probe-specific part of its result (`results[].details`). */
  details: D;
  /** The target URL schemes the probe can measure; any when absent. The plan refuses others. */
  schemes?: readonly Scheme[];
  /** What of a target's request (method, body) and response checks the experiment's jobs apply;
   * absent: the probe sends no HTTP request (tls), so neither concerns it. The plan refuses a
   * target whose settings an experiment on it would not apply. */
  request?: (params: z.output<P>) => RequestSupport;
  /** The variants one experiment makes for one target, in a stable order. */
  variants(params: z.output<P>, target: { url: string }): z.output<V>[];
  /** The most one job of the experiment sends, and at once: checked against JOB_LIMITS. */
  demands(params: z.output<P>): JobDemands;
}

export function defineProbe<K extends string, P extends z.ZodObject, V extends z.ZodObject, D extends z.ZodType>(
  contract: ProbeContract<K, P, V, D>,
): ProbeContract<K, P, V, D> {
  return contract;
}

/** `body`: the target's method and body are sent (else every request is a GET); `checks`: which
 * of the target's checks each response is held to (`status classes`: 2xx, not 200). */
export interface RequestSupport {
  body: boolean;
  checks: 'status, headers and body' | 'status and headers' | 'status' | 'status classes' | 'none';
  /** Why not more, for the plan's message ("a cold client process reports its status only"). */
  why?: string;
}

/** The probes that send requests through TimedHttpClient: everything applies. */
export const EVERY_REQUEST_SETTING: RequestSupport = { body: true, checks: 'status, headers and body' };

export type Scheme = 'http' | 'https';

export function schemeOf(url: string): Scheme {
  return new URL(url).protocol === 'https:' ? 'https' : 'http';
}

/** A probe that sends one request at a time. */
export function sequential(requests: Demand): JobDemands {
  return { requests, concurrency: { value: 1, param: requests.param, how: 'one request at a time' } };
}
