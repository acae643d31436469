// The shards of a load spread over several workers (the load probe's `workers`) merged into the
// one result the plan asked for, as k6-operator's parallel runs make one test: counts added,
// histograms merged (percentiles read from the sum, never averaged), the rate over the time from
// the first shard's start to the last one's end; each shard's own figures kept in `details.shards`.
// Every run report is built through here (coordinator/run-report.ts), embedded or distributed.
import type { ProbeError } from '../contracts/common.js';
import type { Finding } from '../contracts/findings.js';
import { type LoadDetails, type LoadShard, weightiestStop } from '../contracts/probes/load.js';
import type { ProbeResult, ResultOf } from '../contracts/result.js';
import { groupBy } from '../common/group-by.js';
import { encodeHistogram, mergeHistograms, percentilesOf, type Histogram } from '../common/latency-histogram.js';

type LoadResult = ResultOf<'load'>;
type Shard = LoadResult & { shard: NonNullable<LoadResult['shard']> };
type Measured = Shard & { details: LoadDetails };

/** The results with each job's shards replaced by one merged result, at its first shard's place. */
export function mergeShards(results: readonly ProbeResult[]): ProbeResult[] {
  const shards = results.filter((r): r is Shard => r.probe === 'load' && Boolean(r.shard));
  const groups = groupBy(shards, (shard) => shard.shard.partOf);
  if (groups.size === 0) return [...results];
  return results.flatMap((result) => {
    const group = result.probe === 'load' && result.shard ? groups.get(result.shard.partOf) : undefined;
    if (!group) return [result];
    return group[0] === result ? [mergedResult(group)] : [];
  });
}

function mergedResult(unordered: Shard[]): LoadResult {
  const shards = [...unordered].sort((a, b) => a.shard.index - b.shard.index);
  const first = shards[0]!;
  const { partOf, count } = first.shard;
  const startMs = shards.map((r) => Date.parse(r.startedAt));
  const firstStartMs = Math.min(...startMs);
  const windowMs = Math.max(...shards.map((r, i) => startMs[i]! + r.summary.durationMs)) - firstStartMs;
  const measured = shards.filter((r): r is Measured => r.details !== null);
  const merged = measured.length > 0 ? mergedDetails(measured, windowMs, firstStartMs) : undefined;
  const details = merged?.details ?? null;
  const error = mergedError(shards, count);
  const cpuWaits = shards.flatMap((r) => (r.worker.cpuWaitMs === undefined ? [] : [r.worker.cpuWaitMs]));
  const workersLost = Math.max(0, ...shards.map((r) => r.workersLost ?? 0));
  const { shard: _, ...rest } = first;
  return {
    ...rest,
    jobId: partOf,
    ok: error === null,
    error,
    startedAt: new Date(firstStartMs).toISOString(),
    finishedAt: new Date(Math.max(...shards.map((r) => Date.parse(r.finishedAt)))).toISOString(),
    // The first shard's worker; each shard's is in details.shards. The CPU wait is the longest any
    // shard's worker had: what a busy machine added to the merged figures at most.
    worker: { ...first.worker, ...(cpuWaits.length > 0 ? { cpuWaitMs: Math.max(...cpuWaits) } : {}) },
    ...(workersLost > 0 ? { workersLost } : {}),
    summary: {
      requests: sum(shards.map((r) => r.summary.requests)),
      errors: sum(shards.map((r) => r.summary.errors)),
      connectionsOpened: sum(shards.map((r) => r.summary.connectionsOpened)),
      durationMs: windowMs,
      phases:
        merged && merged.latency.totalCount > 0
          ? {
              total: {
                p50: merged.details.latencyMs.p50,
                p95: merged.latency.getValueAtPercentile(95) / 1000,
                p99: merged.details.latencyMs.p99,
                n: merged.latency.totalCount,
              },
            }
          : {},
    },
    details,
    findings: firstOfEachCode(shards),
    altSvc: [...new Set(shards.flatMap((r) => r.altSvc))].slice(0, 16),
  };
}

/** The shards' details together, and their merged latency histogram. */
function mergedDetails(
  shards: Measured[],
  windowMs: number,
  firstStartMs: number,
): { details: LoadDetails; latency: Histogram } {
  const all = shards.map((r) => r.details);
  const latency = mergeHistograms(all.map((d) => d.latencyHistogram));
  const serviceTimes = all.flatMap((d) => (d.serviceTimeHistogram ? [d.serviceTimeHistogram] : []));
  const service = serviceTimes.length === all.length ? mergeHistograms(serviceTimes) : undefined;
  const completed = sum(all.map((d) => d.completed));
  const open = all[0]!.rate !== undefined;
  const details: LoadDetails = {
    loop: all[0]!.loop,
    mode: all[0]!.mode,
    connections: sum(all.map((d) => d.connections)),
    concurrency: sum(all.map((d) => d.concurrency)),
    ...(open
      ? {
          rate: sum(all.map((d) => d.rate ?? 0)),
          scheduled: sum(all.map((d) => d.scheduled ?? 0)),
          unsent: sum(all.map((d) => d.unsent ?? 0)),
        }
      : {}),
    completed,
    errors: addCounts(all.map((d) => d.errors)),
    statuses: addCounts(all.map((d) => d.statuses)),
    connectionsOpened: sum(all.map((d) => d.connectionsOpened)),
    protocols: addCounts(all.map((d) => d.protocols)),
    requestsPerSecond: windowMs > 0 ? (completed * 1000) / windowMs : 0,
    bodyBytes: sum(all.map((d) => d.bodyBytes)),
    stoppedBy: weightiestStop(all.map((d) => d.stoppedBy)),
    latencyMs: percentilesOf(latency),
    latencyHistogram: encodeHistogram(latency),
    ...(service ? { serviceTimeMs: percentilesOf(service), serviceTimeHistogram: encodeHistogram(service) } : {}),
    client: {
      threads: sum(all.map((d) => d.client.threads)),
      cores: sum(all.map((d) => d.client.cores)),
      eventLoopUtilization: all.flatMap((d) => d.client.eventLoopUtilization),
      cpuSeconds: sum(all.map((d) => d.client.cpuSeconds)),
    },
    shards: shards.map((r) => shardFigures(r, firstStartMs)),
  };
  return { details, latency };
}

function shardFigures(r: Measured, firstStartMs: number): LoadShard {
  return {
    index: r.shard.index,
    worker: { host: r.worker.host, pid: r.worker.pid },
    startedAt: r.startedAt,
    startOffsetMs: Date.parse(r.startedAt) - firstStartMs,
    connections: r.details.connections,
    completed: r.details.completed,
    errors: r.summary.errors,
    requestsPerSecond: r.details.requestsPerSecond,
    latencyMs: r.details.latencyMs,
    ...(r.error ? { error: r.error } : {}),
  };
}

/** A shard missing (its job unfinished: the report lists it) or failed makes the whole fail: the
 * merged figures are then not the load the plan asked for. */
function mergedError(shards: Shard[], count: number): ProbeError | null {
  if (shards.length < count)
    return {
      code: 'SHARDS_NOT_TOGETHER',
      message: `${shards.length} of ${count} shards have a result (the report's unfinished jobs say why the others have none): the figures are theirs alone`,
    };
  const failed = shards.find((r) => r.error);
  if (!failed?.error) return null;
  return {
    code: failed.error.code,
    message: `shard ${failed.shard.index} of ${count} (${failed.worker.host}, pid ${failed.worker.pid}): ${failed.error.message}`,
  };
}

/** Each shard's rules ran on its own figures: the first finding of each code, naming its shard. */
function firstOfEachCode(shards: Shard[]): Finding[] {
  const byCode = new Map<string, Finding>();
  for (const r of shards)
    for (const finding of r.findings)
      if (!byCode.has(finding.code))
        byCode.set(finding.code, {
          ...finding,
          evidence: `shard ${r.shard.index} of ${r.shard.count}: ${finding.evidence}`,
        });
  return [...byCode.values()];
}

function addCounts<K extends string>(
  counts: Partial<Record<K, number>>[],
): Partial<Record<K, number>> & Record<K, number> {
  const total: Record<string, number> = {};
  for (const each of counts)
    for (const [key, n] of Object.entries(each) as [string, number][]) total[key] = (total[key] ?? 0) + n;
  return total as Record<K, number>;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
