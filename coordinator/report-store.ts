// Run reports stored in Redis with bounded retention (age and count, contracts/retention.ts):
// each report under its own key with a TTL, an index sorted by start time and a hash of one-line
// summaries for `runs list`. All keys carry the queues' hash tag (contracts/queues.ts), so the
// multi-key updates stay in one slot.
import { reportKeys } from '../contracts/queues.js';
import { runReportSchema, type RunReport } from '../contracts/result.js';
import { DEFAULT_RETENTION, type Keep } from '../contracts/retention.js';
import { runSummarySchema, type RunSummary } from '../contracts/run-job.js';
import { RUN_SCHEMA } from '../contracts/result.js';
import { comparisonSchema, type RunComparison } from '../contracts/comparison.js';
import { isRedisFull, redisFullError } from '../common/redis-errors.js';
import type { RedisClient } from '../common/redis.js';

export function summarizeReport(report: RunReport): RunSummary {
  return {
    schema: RUN_SCHEMA,
    runId: report.runId,
    plan: report.plan.name,
    mode: report.mode,
    regions: report.plan.regions,
    startedAt: report.startedAt,
    finishedAt: report.finishedAt,
    jobs: report.results.length + report.unfinishedJobs.length,
    ok: report.results.filter((r) => r.ok).length,
    errors: report.results.filter((r) => !r.ok).length,
    failed: report.unfinishedJobs.filter((j) => j.status === 'failed').length,
    notRun: report.unfinishedJobs.filter((j) => j.status === 'not-run').length,
    findings: report.findings.length,
  };
}

export class ReportStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    /** How long and how many stored reports are kept (only writes use it). */
    private readonly keep: Keep = DEFAULT_RETENTION.reports,
  ) {}

  /** Stores the report unless one is already stored for its run; returns the stored one.
   * Two processes may finish the same run (the `run` command and the coordinator): the first wins.
   * RedisFullError when Redis refuses it as full (a big report can be refused while small writes
   * still pass: Redis counts the command's own bytes); calling again once it has room completes it. */
  async saveIfAbsent(report: RunReport): Promise<{ report: RunReport; stored: boolean }> {
    const text = JSON.stringify(report);
    try {
      const key = reportKeys.report(this.prefix, report.runId);
      const ttl = this.keep.maxAgeSeconds;
      const set = await this.redis.set(key, text, 'EX', ttl, 'NX');
      if (set === null) {
        const existing = await this.get(report.runId);
        if (existing) {
          // Stored by a call that could not list it (Redis filled up in between): list it now.
          if ((await this.redis.zscore(reportKeys.index(this.prefix), existing.runId)) === null)
            await this.listReport(existing);
          return { report: existing, stored: false };
        }
        // Expired between the two calls: store ours.
        await this.redis.set(key, text, 'EX', ttl);
      }
      await this.listReport(report);
      await this.prune();
      return { report, stored: true };
    } catch (err) {
      if (!isRedisFull(err)) throw err;
      throw await redisFullError(
        this.redis,
        `cannot store the report of run ${report.runId} (${Math.ceil(text.length / 1024)} KiB)`,
      );
    }
  }

  /** Puts a stored report in the index and the summaries (`runs list`). */
  private async listReport(report: RunReport): Promise<void> {
    const replies = await this.redis
      .multi()
      .zadd(reportKeys.index(this.prefix), Date.parse(report.startedAt), report.runId)
      .hset(reportKeys.summaries(this.prefix), report.runId, JSON.stringify(summarizeReport(report)))
      .exec();
    const failure = replies?.find(([err]) => err)?.[0];
    if (failure) throw failure;
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
      .del(...gone.flatMap((id) => [reportKeys.report(this.prefix, id), reportKeys.comparison(this.prefix, id)]))
      .exec();
  }

  async get(runId: string): Promise<RunReport | undefined> {
    const text = await this.redis.get(reportKeys.report(this.prefix, runId));
    if (text === null) return undefined;
    return runReportSchema.parse(JSON.parse(text)) as RunReport;
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
   * newest first: the run's baseline. Empty for a plan's first run.
   */
  async previousRuns(report: RunReport, count: number, scan = 200): Promise<RunReport[]> {
    const ids = await this.redis.zrevrangebyscore(
      reportKeys.index(this.prefix),
      `(${Date.parse(report.startedAt)}`,
      '-inf',
      'LIMIT',
      0,
      scan,
    );
    if (ids.length === 0) return [];
    const rows = await this.redis.hmget(reportKeys.summaries(this.prefix), ...ids);
    const found: RunReport[] = [];
    for (const [i, row] of rows.entries()) {
      if (found.length >= count) break;
      const summary = row === null ? undefined : runSummarySchema.safeParse(JSON.parse(row)).data;
      if (summary?.plan !== report.plan.name || summary.ok + summary.errors === 0) continue;
      const run = await this.get(ids[i]);
      if (run) found.push(run);
    }
    return found;
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
    return text === null ? undefined : comparisonSchema.parse(JSON.parse(text));
  }
}
