// What a job returns (BullMQ return value, or in-process in embedded mode) and what a run
// report holds. `probefleet.run/v1` is the JSON contract documented in docs/result-json.md.
import { z } from 'zod';
import { nameSchema, PHASES, percentilesSchema, probeErrorSchema, SEVERITIES } from './common.js';
import { findingSchema } from './findings.js';
import { jobIdSchema, runIdSchema, shardRefSchema } from './job.js';
import { planAsRunSchema } from './plan.js';
import { DNS_CACHES } from './resolver.js';
import { PROBE_KINDS, PROBES, type ProbeDetails, type ProbeKind, type ProbeVariant } from './probes/index.js';
import { loadTotalSchema } from './probes/load.js';
import { targetLabelValuesSchema } from './target-labels.js';
import { thresholdOutcomeSchema } from './thresholds.js';

export const RESULT_SCHEMA = 'probefleet.result/v1';
export const RUN_SCHEMA = 'probefleet.run/v1';

export const summarySchema = z.strictObject({
  /** Requests attempted (answered or failed). */
  requests: z.int().nonnegative(),
  errors: z.int().nonnegative(),
  /** Connections opened, counted at the socket layer. */
  connectionsOpened: z.int().nonnegative(),
  /** Wall time of the whole measurement, first request to last byte. */
  durationMs: z.number().nonnegative(),
  /** Per phase, over the requests where the phase applies (milliseconds). */
  phases: z.partialRecord(z.enum(PHASES), percentilesSchema),
});
export type Summary = z.infer<typeof summarySchema>;

const isoTime = z.iso.datetime();

/** How a job's connections resolved the target's host name (its `dns` and `ipFamily` settings). */
export const resolutionSchema = z.strictObject({
  /** `system`, or the DNS server asked (`HOST:PORT`). */
  server: z.string(),
  cache: z.enum(DNS_CACHES),
  /** 4, 6, `happy-eyeballs`, or `any` (the first address answered). */
  ipFamily: z.union([z.literal(4), z.literal(6), z.enum(['happy-eyeballs', 'any'])]),
  /** Lookups the measurement made (a warm cache's own lookup before it is not one). */
  lookups: z.int().nonnegative(),
  /** Connections that took the address from the warm cache. */
  fromCache: z.int().nonnegative(),
  /** The distinct sets of addresses the lookups answered, each in the order answered (at most 8). */
  answers: z.array(z.array(z.string()).max(64)).max(8),
});
export type Resolution = z.infer<typeof resolutionSchema>;

function resultSchemaFor<K extends ProbeKind>(kind: K) {
  return z.strictObject({
    schema: z.literal(RESULT_SCHEMA),
    jobId: jobIdSchema,
    runId: runIdSchema,
    region: nameSchema,
    target: nameSchema,
    /** The target's labels (the plan's `targetLabels`); absent when it has none. */
    labels: targetLabelValuesSchema.optional(),
    probe: z.literal(kind),
    variant: PROBES[kind].variant,
    /** False when the probe could not measure what it was asked to; `error` says why. */
    ok: z.boolean(),
    error: probeErrorSchema.nullable(),
    startedAt: isoTime,
    finishedAt: isoTime,
    /** Which worker ran the job. */
    worker: z.strictObject({
      host: z.string(),
      pid: z.int(),
      region: nameSchema,
      /** How long the worker's measuring thread waited for a CPU during the job (Linux's run_delay), ms:
       * what a busy machine added to the job's times. Absent where the kernel does not say. */
      cpuWaitMs: z.number().nonnegative().optional(),
    }),
    /** A shard of a job spread over several workers (the load probe's `workers`): a run report
     * holds the shards merged into one result (coordinator/load-shards.ts), without this. */
    shard: shardRefSchema.optional(),
    /** Distributed runs: times a worker took this job and was lost (killed or hung: its lock
     * expired) before this worker took it again and measured it whole. Absent: never. */
    workersLost: z.int().positive().optional(),
    summary: summarySchema,
    details: PROBES[kind].details.nullable(),
    findings: z.array(findingSchema),
    /** How the connections resolved the target's host name; absent when it is an IP address, or
     * the probe does not connect to the target (dns). */
    resolution: resolutionSchema.optional(),
    /** Every distinct Alt-Svc header value the job's responses carried (the tls probe sends no HTTP). */
    altSvc: z.array(z.string()).max(16).default([]),
  });
}

export const probeResultSchema = z.discriminatedUnion(
  'probe',
  PROBE_KINDS.map(resultSchemaFor) as [ReturnType<typeof resultSchemaFor>, ...ReturnType<typeof resultSchemaFor>[]],
  // zod cannot tie each member's `probe` literal to its own parameters through a generic map;
  // the hand-written type below does, and every member is built by the same function.
) as unknown as z.ZodType<ProbeResult>;

type ResultBase = Omit<z.output<ReturnType<typeof resultSchemaFor<ProbeKind>>>, 'probe' | 'variant' | 'details'>;
export type ResultOf<K extends ProbeKind> = ResultBase & {
  probe: K;
  variant: ProbeVariant<K>;
  details: ProbeDetails<K> | null;
};
export type ProbeResult = { [K in ProbeKind]: ResultOf<K> }[ProbeKind];

export const comparisonSchema = z.strictObject({
  region: nameSchema,
  target: nameSchema,
  scheme: z.enum(['http', 'https']),
  reusedMedianMs: z.number(),
  newMedianMs: z.number(),
  /** median(new) − median(reused) of per-request total time, with a bootstrap 95% interval. */
  newConnectionCostMs: z.strictObject({
    median: z.number(),
    ci95: z.tuple([z.number(), z.number()]),
  }),
  /** The cost's tail: p95 and p99 of the time the new connections took to open (resolve +
   * connect + TLS), whose median is the cost's; a lost SYN's retransmission timeout shows here
   * first. (A difference of the totals' tails would mix in what reused requests lose too.)
   * `n`: the new connections they are of. Always written, with `n`; older runs may lack either,
   * and still read. */
  newConnectionCostTailMs: z
    .strictObject({ p95: z.number(), p99: z.number(), n: z.int().nonnegative().optional() })
    .optional(),
  /** Why the difference is no cost of a new connection (reused requests stalled, the server closes
   * every connection); reports print this instead of the number. Absent when there is a cost. */
  noCostReason: z.string().optional(),
});
export type Comparison = z.infer<typeof comparisonSchema>;

export const decisionSchema = z.strictObject({
  situation: z.string(),
  action: z.string(),
  /** The numbers from this run that say so. */
  evidence: z.string(),
  severity: z.enum(SEVERITIES),
});
export type Decision = z.infer<typeof decisionSchema>;

/** Which job: enough to name it in a report without its result. */
export const jobRefSchema = z.strictObject({
  jobId: jobIdSchema,
  region: nameSchema,
  target: nameSchema,
  probe: z.enum(PROBE_KINDS),
  variant: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  /** A shard of a job spread over several workers: a batch of its own (batchesOf). */
  shard: shardRefSchema.optional(),
});
export type JobRef = z.infer<typeof jobRefSchema>;

/** A job of a distributed run that has no result: it failed for good (`failed`: a malformed
 * payload, a worker that died twice on it, its time bound overrun), or no worker took it before
 * the run's deadline (`not-run`: typically a region without a live worker). */
export const unfinishedJobSchema = jobRefSchema.extend({
  status: z.enum(['failed', 'not-run']),
  reason: z.string(),
  /** Times a worker took this job and was lost (killed or hung) while running it. Absent: never. */
  workersLost: z.int().positive().optional(),
});
export type UnfinishedJob = z.infer<typeof unfinishedJobSchema>;

export const runReportSchema = z.strictObject({
  schema: z.literal(RUN_SCHEMA),
  runId: runIdSchema,
  mode: z.enum(['embedded', 'distributed']),
  /** The plan as run, header values redacted. */
  plan: planAsRunSchema,
  startedAt: isoTime,
  finishedAt: isoTime,
  results: z.array(probeResultSchema),
  /** Jobs without a result (distributed runs only; always empty in embedded mode). */
  unfinishedJobs: z.array(unfinishedJobSchema).default([]),
  comparisons: z.array(comparisonSchema),
  findings: z.array(findingSchema),
  decisions: z.array(decisionSchema),
  /** Per load experiment and target, every region's histograms merged. */
  loadTotals: z.array(loadTotalSchema).default([]),
  /** The plan's thresholds against this run (none when the plan has none). */
  thresholds: thresholdOutcomeSchema.default({ checks: [], unchecked: [] }),
});
export type RunReport = Omit<z.output<typeof runReportSchema>, 'results'> & { results: ProbeResult[] };

/** A run's results with an error, or measured again after their worker was lost, that a report's
 * head keeps (the first of them): what the summary of a big run shows of its results. */
export const NOTABLE_RESULTS_KEPT = 100;
/** A result a report's head keeps (among the first NOTABLE_RESULTS_KEPT): an error, or a lost worker. */
export const isNotableResult = (r: ProbeResult) => !!(r.error || r.workersLost);

/**
 * A run report stored in parts (coordinator/report-store.ts): this head, which is the report
 * without its results, and the results apart, in pages. A run of 100,000 jobs is never one JSON
 * document in Redis or in a process; the run JSON (`probefleet.run/v1`) is the head and the pages
 * written out together.
 */
export const runReportHeadSchema = runReportSchema.omit({ results: true }).extend({
  resultCount: z.int().nonnegative(),
  /** Results whose `ok` is true. */
  okCount: z.int().nonnegative(),
  /** The first NOTABLE_RESULTS_KEPT results with an error or a lost worker. */
  notableResults: z.array(probeResultSchema).max(NOTABLE_RESULTS_KEPT),
});
export type RunReportHead = Omit<z.output<typeof runReportHeadSchema>, 'notableResults'> & {
  notableResults: ProbeResult[];
};

/** A finished run read a page of results at a time: the report without its results (`head`), and
 * the results in the report's order. A whole report is one page; a stored big run many
 * (coordinator/run-parts.ts). */
export interface RunInPages<Head extends Omit<RunReport, 'results'> = Omit<RunReport, 'results'>> {
  head: Head;
  pages(): AsyncIterable<readonly ProbeResult[]>;
}

/** The report of a head and its results (the run JSON's shape, keys in the schema's order). */
export function reportOf(head: RunReportHead, results: ProbeResult[]): RunReport {
  const { resultCount: _count, okCount: _ok, notableResults: _notable, ...rest } = head;
  const { schema, runId, mode, plan, startedAt, finishedAt, ...analysis } = rest;
  return { schema, runId, mode, plan, startedAt, finishedAt, results, ...analysis };
}

/** The head of a whole report (as `run --json` writes it, and as earlier versions stored it). */
export function headOf(report: RunReport): RunReportHead {
  const { results, ...rest } = report;
  return {
    ...rest,
    resultCount: results.length,
    okCount: results.filter((r) => r.ok).length,
    notableResults: results.filter(isNotableResult).slice(0, NOTABLE_RESULTS_KEPT),
  };
}
