import type { z } from 'zod';
import type { FindingSpec } from '../common.js';
import type { Demand, JobDemands } from '../limits.js';

/** What the plan, the splitter and the worker know about one probe kind. */
export interface ProbeContract<
  K extends string,
  P extends z.ZodObject,
  V extends z.ZodObject,
  D extends z.ZodType,
  F extends Record<string, FindingSpec>,
> {
  kind: K;
  /** What one job does, in a line. */
  summary: string;
  /** The question the probe answers, for the probe table (docs/catalogue.md). */
  question: string;
  /** The jobs an experiment makes per target, for the probe table; may hold Markdown. */
  jobs: string;
  /** The findings the probe's own rules make, by code: they join the catalogue (contracts/findings.ts). */
  findings?: F;
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
  /** Why the probe cannot measure a target, its URL as the plan gives it (a `lab:` URL unresolved),
   * or undefined when it can: the plan refuses the experiment on that target with this reason. */
  targetProblem?: (url: string) => string | undefined;
  /** Whether the probe sends to the target's address (every HTTP and TLS probe): the worker then
   * checks that address with its target policy before the probe starts. false: it sends elsewhere
   * (dns: to its resolvers) and checks those addresses itself. @defaultValue true */
  sendsToTarget?: boolean;
  /** Parameters that may name a lab server (the dns probe's `resolvers: [lab:dns]`): the entry
   * point that knows where the lab is makes them real (coordinator/lab-targets.ts), as it does a
   * target's `lab:` URL, so a job never carries one. Absent: its parameters name none. */
  labParams?: {
    /** The lab references among the parameters ("lab:dns"); empty when none. */
    of(params: z.output<P>): string[];
    /** The parameters with every lab reference made real by `at`. */
    resolved(params: z.output<P>, at: (reference: string) => string): z.output<P>;
  };
  /** Experiments whose jobs may be spread over several workers of a region (the load probe's
   * `workers`): each job becomes `count` shards, one per worker, which start together and whose
   * results the coordinator merges into one (coordinator/load-shards.ts). Absent: never spread. */
  shards?: ShardSpec<z.output<P>>;
  /** The variants one experiment makes for one target, in a stable order. */
  variants(params: z.output<P>, target: { url: string }): z.output<V>[];
  /** The most one job of the experiment sends, and at once: checked against JOB_LIMITS. */
  demands(params: z.output<P>): JobDemands;
}

export function defineProbe<
  K extends string,
  P extends z.ZodObject,
  V extends z.ZodObject,
  D extends z.ZodType,
  const F extends Record<string, FindingSpec> = Record<never, FindingSpec>,
>(contract: ProbeContract<K, P, V, D, F>): ProbeContract<K, P, V, D, F> {
  return contract;
}

/** How a probe's jobs are spread over several workers (ProbeContract's `shards`). */
export interface ShardSpec<Params> {
  /** How many workers one job is spread over (1: not spread), and how long its shards wait for
   * each other to be taken before they fail. */
  of(params: Params): { count: number; joinSeconds: number };
  /** Shard `index`'s parameters: its share of the experiment's, as a job of its own would have them. */
  share(params: Params, index: number, count: number): Params;
  /** Why the parameters cannot be spread over that many workers, with the parameter to point at. */
  problems(params: Params): { param: string; message: string }[];
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
