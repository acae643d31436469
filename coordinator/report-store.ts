// Run reports stored in Redis with bounded retention (age and count, contracts/retention.ts):
// each report in two parts with a TTL, its head (the report without its results) and its results
// as a list of pages, an index sorted by start time and a hash of one-line summaries for `runs
// list`. A run of 100,000 jobs is written and read a page at a time, never as one document. All
// keys carry the queues' hash tag (contracts/queues.ts), so the multi-key updates stay in one slot.
import { reportKeys } from '../contracts/queues.js';
import { randomUUID } from 'node:crypto';
import {
  headOf,
  probeResultSchema,
  reportOf,
  runReportHeadSchema,
  runReportSchema,
  type ProbeResult,
  type RunReport,
  type RunReportHead,
} from '../contracts/result.js';
import { DEFAULT_RETENTION, type Keep } from '../contracts/retention.js';
import { runSummarySchema, type RunSummary } from '../contracts/run-job.js';
import { RUN_SCHEMA } from '../contracts/result.js';
import { COMPARISON_SCHEMA, comparisonSchema, type RunComparison } from '../contracts/comparison.js';
import { isRedisFull, redisFullError } from '../common/redis-errors.js';
import type { RedisClient } from '../common/redis.js';
import type { RunParts } from './run-parts.js';

/** Results per element of a stored report's results list: a page is a few hundred KB. */
export const RESULTS_PER_PAGE = 500;
/** A draft no finisher wrote to for this long is dropped by Redis (its finisher died). */
const DRAFT_TTL_SECONDS = 3_600;
/** Pages read per LRANGE. */
const PAGES_PER_READ = 4;

/** One finisher's result pages of a report, under a key of its own until the report is stored. */
export interface ReportDraft {
  readonly key: string;
  /** Pages written so far: what the draft must hold when it is stored. */
  readonly pages: number;
  /** Appends results, a page per RESULTS_PER_PAGE. RedisFullError when Redis is too full for them. */
  add(results: readonly ProbeResult[]): Promise<void>;
  /** Drops what was written (a report that was stored by another finisher, or could not be). */
  discard(): Promise<void>;
}

/** The lease to finish a run, held by one finisher at a time (ReportStore.takeFinishing). */
export interface FinishingLease {
  /** Extends the lease to its full length from now; false when this finisher no longer holds it
   * (it ran out, and another finisher took it). */
  renew(): Promise<boolean>;
  /** Gives the lease up, if this finisher still holds it. */
  release(): Promise<void>;
}

/** KEYS: the lease; ARGV: this finisher's token, the lease in ms. Only the holder extends it. */
const RENEW_LEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;
/** KEYS: the lease; ARGV: this finisher's token. Only the holder drops it. */
const RELEASE_LEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

/**
 * Stores a report unless one is stored for its run: 1 if stored, 0 if one was (the draft is
 * dropped), -1 if the draft does not hold the pages written to it (expired, or lost in a failover).
 * KEYS: head, results list, draft, index, summaries; ARGV: head JSON, TTL seconds, pages written,
 * start (ms), summary JSON, run id. The head's SET is the first write: a full Redis refuses it
 * before anything changed (a script is checked only up to its first write), and the listing after
 * it is part of the same change, so a report is never stored without being listed.
 */
const STORE_REPORT = `if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('DEL', KEYS[3])
  return 0
end
if redis.call('LLEN', KEYS[3]) ~= tonumber(ARGV[3]) then
  return -1
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[6])
redis.call('HSET', KEYS[5], ARGV[6], ARGV[5])
if tonumber(ARGV[3]) > 0 then
  redis.call('RENAME', KEYS[3], KEYS[2])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
else
  redis.call('DEL', KEYS[2])
end
return 1`;

export function summarizeReport(head: RunReportHead): RunSummary {
  return {
    schema: RUN_SCHEMA,
    runId: head.runId,
    plan: head.plan.name,
    mode: head.mode,
    regions: head.plan.regions,
    startedAt: head.startedAt,
    finishedAt: head.finishedAt,
    jobs: head.resultCount + head.unfinishedJobs.length,
    ok: head.okCount,
    errors: head.resultCount - head.okCount,
    failed: head.unfinishedJobs.filter((j) => j.status === 'failed').length,
    notRun: head.unfinishedJobs.filter((j) => j.status === 'not-run').length,
    findings: head.findings.length,
  };
}

/** A report's draft lost pages before it was stored: built again by the next finisher's try. */
export class ReportPagesLostError extends Error {
  override name = 'ReportPagesLostError';
}

export class ReportStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    /** How long and how many stored reports are kept (only writes use it). */
    private readonly keep: Keep = DEFAULT_RETENTION.reports,
  ) {}

  /**
   * The lease to finish a run for `leaseMs`, unless another finisher holds it: the `run` command and
   * the coordinator often finish a run at once, and one builds while the other waits for its
   * report. A holder that dies leaves it to expire. RedisFullError when Redis is too full for it.
   */
  async takeFinishing(runId: string, leaseMs: number): Promise<FinishingLease | undefined> {
    const { redis } = this;
    const key = reportKeys.reportFinishing(this.prefix, runId);
    const token = randomUUID();
    try {
      if ((await redis.set(key, token, 'PX', leaseMs, 'NX')) === null) return undefined;
    } catch (err) {
      if (!isRedisFull(err)) throw err;
      throw await redisFullError(redis, `cannot start finishing run ${runId}`);
    }
    return {
      async renew() {
        return (await redis.eval(RENEW_LEASE, 1, key, token, leaseMs)) === 1;
      },
      async release() {
        await redis.eval(RELEASE_LEASE, 1, key, token);
      },
    };
  }

  /** Where a finisher writes the report's result pages before `saveIfAbsent` stores them with its head. */
  draft(runId: string): ReportDraft {
    const key = reportKeys.reportDraft(this.prefix, runId, randomUUID());
    const { redis } = this;
    let pages = 0;
    return {
      key,
      get pages() {
        return pages;
      },
      async add(results) {
        for (let i = 0; i < results.length; i += RESULTS_PER_PAGE) {
          const page = JSON.stringify(results.slice(i, i + RESULTS_PER_PAGE));
          try {
            // Renewed with every page: a backstop for a finisher that dies before storing or dropping it.
            const replies = await redis.multi().rpush(key, page).expire(key, DRAFT_TTL_SECONDS).exec();
            const failure = replies?.find(([err]) => err)?.[0];
            if (failure) throw failure;
            pages++;
          } catch (err) {
            if (!isRedisFull(err)) throw err;
            throw await redisFullError(
              redis,
              `cannot store the results of run ${runId} (a page of ${Math.ceil(page.length / 1024)} KiB)`,
            );
          }
        }
      },
      async discard() {
        await redis.del(key);
      },
    };
  }

  /** Stores the report's head, with the results its draft holds, and lists it (`runs list`),
   * unless a report is already stored for its run; `stored` says which. Two processes may finish the
   * same run (the `run` command and the coordinator): the first wins, and the other's draft is
   * dropped. RedisFullError when Redis refuses it as full (nothing changed: calling again with a new
   * draft once it has room completes it); ReportPagesLostError when the draft lost pages. */
  async saveIfAbsent(head: RunReportHead, draft?: ReportDraft): Promise<{ stored: boolean }> {
    const text = JSON.stringify(head);
    let outcome: number;
    try {
      outcome = (await this.redis.eval(
        STORE_REPORT,
        5,
        reportKeys.report(this.prefix, head.runId),
        reportKeys.reportResults(this.prefix, head.runId),
        draft?.key ?? reportKeys.reportDraft(this.prefix, head.runId, 'none'),
        reportKeys.index(this.prefix),
        reportKeys.summaries(this.prefix),
        text,
        this.keep.maxAgeSeconds,
        draft?.pages ?? 0,
        Date.parse(head.startedAt),
        JSON.stringify(summarizeReport(head)),
        head.runId,
      )) as number;
    } catch (err) {
      if (!isRedisFull(err)) throw err;
      throw await redisFullError(
        this.redis,
        `cannot store the report of run ${head.runId} (${Math.ceil(text.length / 1024)} KiB)`,
      );
    }
    if (outcome === -1)
      throw new ReportPagesLostError(
        `run ${head.runId}: the report's result pages written to Redis are not all there (${draft?.pages ?? 0} written; the draft expired or a failover lost some): it is built again`,
      );
    if (outcome === 1) await this.prune();
    return { stored: outcome === 1 };
  }

  /** Removes reports past the age bound (their keys expired already; the index and summaries
   * still name them) and the oldest beyond the count bound. */
  private async prune(): Promise<void> {
    const index = reportKeys.index(this.prefix);
    const [expired, overCount] = await Promise.all([
      this.redis.zrangebyscore(index, '-inf', `(${Date.now() - this.keep.maxAgeSeconds * 1000}`),
      this.redis.zrevrange(index, this.keep.maxCount, -1),
    ]);
    const gone = [...new Set([...expired, ...overCount])];
    if (gone.length === 0) return;
    await this.redis
      .multi()
      .zrem(index, ...gone)
      .hdel(reportKeys.summaries(this.prefix), ...gone)
      .del(
        ...gone.flatMap((id) => [
          reportKeys.report(this.prefix, id),
          reportKeys.reportResults(this.prefix, id),
          reportKeys.comparison(this.prefix, id),
        ]),
      )
      .exec();
  }

  /** The stored head of a run's report; a whole report stored by an earlier version, as its head. */
  async getHead(runId: string): Promise<RunReportHead | undefined> {
    const stored = await this.readStored(runId);
    if (!stored) return undefined;
    return 'results' in stored ? headOf(stored) : stored;
  }

  /** A stored report's results, a page at a time (in the order they were stored). */
  async *results(runId: string): AsyncGenerator<ProbeResult[]> {
    const stored = await this.readStored(runId);
    if (!stored) return;
    if ('results' in stored) {
      yield stored.results;
      return;
    }
    const key = reportKeys.reportResults(this.prefix, runId);
    for (let start = 0; ; start += PAGES_PER_READ) {
      const pages = await this.redis.lrange(key, start, start + PAGES_PER_READ - 1);
      for (const page of pages) yield probeResultSchema.array().parse(JSON.parse(page)) as ProbeResult[];
      if (pages.length < PAGES_PER_READ) return;
    }
  }

  /** A stored run as what shows it reads it: its head, and its results read a page at a time. */
  async parts(runId: string): Promise<RunParts | undefined> {
    const head = await this.getHead(runId);
    return head && { head, pages: () => this.results(runId) };
  }

  /** The whole stored report (its head and every result): for runs small enough to hold at once. */
  async get(runId: string): Promise<RunReport | undefined> {
    const head = await this.getHead(runId);
    if (!head) return undefined;
    const results: ProbeResult[] = [];
    for await (const page of this.results(runId)) results.push(...page);
    return reportOf(head, results);
  }

  /** The head, or a whole report an earlier version stored. */
  private async readStored(runId: string): Promise<RunReportHead | RunReport | undefined> {
    const text = await this.redis.get(reportKeys.report(this.prefix, runId));
    if (text === null) return undefined;
    const json = JSON.parse(text) as { results?: unknown };
    return 'results' in json
      ? (runReportSchema.parse(json) as RunReport)
      : (runReportHeadSchema.parse(json) as RunReportHead);
  }

  /** The newest stored runs first (the index is pruned on writes, so expired reports are skipped here). */
  async list(limit: number): Promise<RunSummary[]> {
    const ids = await this.redis.zrevrange(reportKeys.index(this.prefix), 0, limit * 2 - 1);
    if (ids.length === 0) return [];
    const read = this.redis.pipeline().hmget(reportKeys.summaries(this.prefix), ...ids);
    for (const id of ids) read.exists(reportKeys.report(this.prefix, id));
    const [[, rows], ...exists] = (await read.exec()) ?? [];
    return (rows as (string | null)[])
      .flatMap((row, i) => {
        if (row === null || exists[i]?.[1] !== 1) return [];
        const parsed = runSummarySchema.safeParse(JSON.parse(row));
        return parsed.success ? [parsed.data] : [];
      })
      .slice(0, limit);
  }

  /**
   * Up to `count` stored runs of the same plan that started before this one and have a result,
   * newest first, each to be read a page at a time: the run's baseline. Empty for a plan's first run.
   */
  async previousRuns(
    report: { startedAt: string; plan: { name: string } },
    count: number,
    scan = 200,
  ): Promise<RunParts[]> {
    const found: RunParts[] = [];
    for await (const id of this.previousRunIds(report, scan)) {
      if (found.length >= count) break;
      const run = await this.parts(id);
      if (run) found.push(run);
    }
    return found;
  }

  /** Whether the plan has a stored run before this one, with a result: its summaries only, no head read. */
  async hasPreviousRun(report: { startedAt: string; plan: { name: string } }): Promise<boolean> {
    for await (const _ of this.previousRunIds(report, 200)) return true;
    return false;
  }

  /** The ids of the plan's stored runs that started before this one and have a result, newest
   * first, of the `scan` newest stored runs before it. */
  private async *previousRunIds(report: { startedAt: string; plan: { name: string } }, scan: number) {
    const ids = await this.redis.zrevrangebyscore(
      reportKeys.index(this.prefix),
      `(${Date.parse(report.startedAt)}`,
      '-inf',
      'LIMIT',
      0,
      scan,
    );
    if (ids.length === 0) return;
    const rows = await this.redis.hmget(reportKeys.summaries(this.prefix), ...ids);
    for (const [i, row] of rows.entries()) {
      const summary = row === null ? undefined : runSummarySchema.safeParse(JSON.parse(row)).data;
      if (summary?.plan === report.plan.name && summary.ok + summary.errors > 0) yield ids[i]!;
    }
  }

  /** Stores a run's comparison beside its report (same retention) unless one is stored; returns the stored one. */
  async saveComparisonIfAbsent(comparison: RunComparison): Promise<RunComparison> {
    const key = reportKeys.comparison(this.prefix, comparison.after.runId);
    const set = await this.redis.set(key, JSON.stringify(comparison), 'EX', this.keep.maxAgeSeconds, 'NX');
    return set === null ? ((await this.getComparison(comparison.after.runId)) ?? comparison) : comparison;
  }

  /** The stored comparison of a run with the earlier runs of its plan. */
  async getComparison(runId: string): Promise<RunComparison | undefined> {
    const text = await this.redis.get(reportKeys.comparison(this.prefix, runId));
    if (text === null) return undefined;
    // One an earlier version stored, in its own format: made again from the runs.
    const json = JSON.parse(text) as { schema?: unknown };
    return json.schema === COMPARISON_SCHEMA ? comparisonSchema.parse(json) : undefined;
  }
}
