// What a comparison thread (compare-thread.ts) runs: the runs a request names, read a page at a
// time from run files or the fleet's Redis, compared (compare-runs.ts). Posts the comparison, or
// why there is none, or the error, once.
import { parentPort, workerData } from 'node:worker_threads';
import { BadArgumentError, BadInputError } from '../../common/bad-input.js';
import { createLogger, type Logger } from '../../common/log.js';
import { RedisFullError, RedisUnreachableError } from '../../common/redis-errors.js';
import type { RunComparison } from '../../contracts/comparison.js';
import type { RunReportHead } from '../../contracts/result.js';
import type { ReportStore } from '../report-store.js';
import { readRunFileParts } from '../report/run-file.js';
import type { RunParts } from '../run-parts.js';
import { compareRuns } from './compare-runs.js';
import { type ComparisonRequest, type NoBaseline, noBaselineFor, type ThreadError } from './compare-thread.js';
import { BASELINE_RULE } from './rules.js';

/** How many earlier runs a run's baseline holds: the plan's `baseline.runs`, else the rule's default. */
const baselineRunsOf = (head: Pick<RunReportHead, 'plan'>) => head.plan.baseline?.runs ?? BASELINE_RULE.defaultRuns;

/** The earlier runs newest first, as the baseline takes them. */
const newestFirst = (runs: RunParts[]) =>
  [...runs].sort((a, b) => Date.parse(b.head.startedAt) - Date.parse(a.head.startedAt));

async function storedRun(store: ReportStore, id: string): Promise<RunParts> {
  const run = await store.parts(id);
  if (!run)
    throw new BadArgumentError(
      `no stored run "${id}" (see: probefleet runs list; reports expire after the coordinator's retention)`,
    );
  return run;
}

/**
 * The stored comparison of a run, else one made now from the earlier stored runs of its plan
 * (`runs` of them; asking for a number always makes a new one); NoBaseline for a plan's first run.
 * Reads only.
 */
async function comparisonWithBaseline(
  store: ReportStore,
  run: RunParts,
  runs: number | undefined,
): Promise<RunComparison | NoBaseline> {
  const { head } = run;
  if (runs === undefined) {
    const stored = await store.getComparison(head.runId);
    if (stored) return stored;
  }
  const baseline = await store.previousRuns(head, runs ?? baselineRunsOf(head));
  if (baseline.length === 0) return noBaselineFor(head);
  return compareRuns(baseline, run);
}

/** Makes the comparison a request asks for (in the thread; callable anywhere). */
export async function makeComparison(request: ComparisonRequest, log: Logger): Promise<RunComparison | NoBaseline> {
  if ('files' in request) {
    const { files } = request;
    // Each file is checked whole here (its head and every result) and read again a page at a time.
    const parts = await Promise.all(files.map((file) => readRunFileParts(file)));
    const sources = new Map(parts.map((r, i) => [r, files[i]!]));
    const baseline = newestFirst(parts.slice(0, -1));
    return compareRuns(baseline, parts[parts.length - 1]!, {
      baseline: baseline.map((r) => sources.get(r)!),
      after: files[files.length - 1]!,
    });
  }
  // Loaded here: comparing run files needs no Redis client.
  const [{ openFleetClient }, { whileReachable }] = await Promise.all([
    import('../fleet-client.js'),
    import('../fleet-connection.js'),
  ]);
  const fleet = openFleetClient({ ...request.stored, log });
  const compare = async (): Promise<RunComparison | NoBaseline> => {
    if ('runs' in request) {
      const runs = await Promise.all(request.runs.map((id) => storedRun(fleet.store, id)));
      return compareRuns(newestFirst(runs.slice(0, -1)), runs[runs.length - 1]!);
    }
    const id = request.previous ?? (await fleet.store.list(1))[0]?.runId;
    if (!id) throw new BadArgumentError('no stored runs (see: probefleet runs list)');
    return comparisonWithBaseline(fleet.store, await storedRun(fleet.store, id), request.baselineRuns);
  };
  try {
    // A command that ends (its Redis commands bounded) says an unreachable Redis as such; the
    // coordinator's comparison waits out a Redis restart, as the coordinator does.
    return await (request.stored.redis.commandTimeoutMs === undefined ? compare() : whileReachable(fleet, compare));
  } finally {
    await fleet.close();
  }
}

const threadErrorOf = (err: unknown): ThreadError => ({
  kind:
    err instanceof BadInputError
      ? 'bad-input'
      : err instanceof RedisUnreachableError || err instanceof RedisFullError
        ? 'redis-unreachable'
        : 'other',
  message: err instanceof Error ? err.message : String(err),
});

// Only in a thread compare-thread.ts started: the main thread imports this module for its names.
if (parentPort && workerData?.comparisonRequest) {
  const port = parentPort;
  const { comparisonRequest, logLevel } = workerData as { comparisonRequest: ComparisonRequest; logLevel: string };
  makeComparison(comparisonRequest, createLogger('compare', logLevel)).then(
    (made) => port.postMessage({ made }),
    (err: unknown) => port.postMessage({ error: threadErrorOf(err) }),
  );
}
