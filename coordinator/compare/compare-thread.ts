// A comparison runs in a thread of its own (compare-thread-task.ts). Comparing a run of 100,000
// jobs with 7 earlier ones is minutes of CPU and gigabytes of short-lived pages: in a thread the
// caller's event loop (the coordinator's leases, lock renewals, deadline sweeps and /metrics) never
// waits on it, its heap is bounded, and all of it is given back when the thread ends.
import { Worker } from 'node:worker_threads';
import { BadInputError } from '../../common/bad-input.js';
import type { RedisSettings } from '../../common/redis.js';
import { RedisUnreachableError } from '../../common/redis-errors.js';
import type { RunComparison } from '../../contracts/comparison.js';

/**
 * The thread's heap (V8's old generation). A comparison of 100,000 jobs of 20 requests with 7
 * earlier runs needed 192–256 MB of it at its peak, measured before the new run's jobs shared one
 * hidden class (less since); under this bound V8 collects the pages read rather than letting them
 * pile up (docs/decisions/035).
 */
export const COMPARISON_HEAP_MB = 512;
/** The thread's young generation, where each page of results read is parsed and dropped. At V8's
 * default the coordinator's next night of 100,000 one-request jobs peaked at 310 MB, not 282, and a
 * comparison of 20-request jobs at 388 MB, not 371, for ~15 % less CPU (bench/README.md, "The next
 * night"): the coordinator's memory is the scarcer. */
export const COMPARISON_YOUNG_GENERATION_MB = 16;
/** Below this the thread cannot load what a comparison needs (12–16 MB), and under Node 24 a heap
 * of a few MB fails V8's start of the thread, which ends the whole process. */
export const MIN_COMPARISON_HEAP_MB = 64;

const TASK_MODULE = new URL('./compare-thread-task.js', import.meta.url);

/** Where a fleet's stored runs are: what the thread opens its own connection with. */
export interface StoredRunsAt {
  redis: RedisSettings;
  prefix: string;
}

/** What to compare: the earlier runs (the baseline), then the new run last, as run files or stored
 * run ids; or a stored run with the earlier stored runs of its plan (`baselineRuns` of them, else
 * the plan's; its stored comparison when none is asked for; the newest stored run when none is named). */
export type ComparisonRequest =
  | { files: string[] }
  | { stored: StoredRunsAt; runs: string[] }
  | { stored: StoredRunsAt; previous: string | undefined; baselineRuns: number | undefined };

/** Why a run has no comparison: no earlier stored run of its plan to compare it with. */
export interface NoBaseline {
  noBaseline: string;
}

export const noBaselineFor = (head: { runId: string; plan: { name: string } }): NoBaseline => ({
  noBaseline: `run "${head.runId}" is the first stored run of plan ${head.plan.name}: nothing to compare with`,
});

/** How an error crosses back from the thread: its kind (which the CLI's exit code follows) and message. */
export interface ThreadError {
  kind: 'bad-input' | 'redis-unreachable' | 'other';
  message: string;
}

/** The comparison was stopped by the caller's signal. */
export class ComparisonStoppedError extends Error {
  override name = 'ComparisonStoppedError';
}

const errorOf = ({ kind, message }: ThreadError) =>
  kind === 'bad-input'
    ? new BadInputError(message)
    : kind === 'redis-unreachable'
      ? new RedisUnreachableError(message)
      : new Error(message);

/**
 * The comparison a request asks for, made in a new thread: rejects with the thread's error (a
 * BadInputError or RedisUnreachableError as such), with one that names the heap bound when the
 * comparison outgrows its heap (`heapMb`, else COMPARISON_HEAP_MB), or with ComparisonStoppedError
 * when `signal` aborts (the thread is ended).
 */
export function compareInThread(
  request: ComparisonRequest,
  options: { logLevel: string; signal?: AbortSignal; heapMb?: number },
): Promise<RunComparison | NoBaseline> {
  const { signal, heapMb = COMPARISON_HEAP_MB } = options;
  if (signal?.aborted) return Promise.reject(new ComparisonStoppedError('stopped before it started'));
  return new Promise((resolve, reject) => {
    const thread = new Worker(TASK_MODULE, {
      workerData: { comparisonRequest: request, logLevel: options.logLevel },
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: COMPARISON_YOUNG_GENERATION_MB },
    });
    let settled = false;
    const settle = (outcome: { made: RunComparison | NoBaseline } | { error: Error }) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      void thread.terminate();
      if ('made' in outcome) resolve(outcome.made);
      else reject(outcome.error);
    };
    const onAbort = () => settle({ error: new ComparisonStoppedError('stopped while it was being made') });
    signal?.addEventListener('abort', onAbort, { once: true });
    thread.on('message', (message: { made?: RunComparison | NoBaseline; error?: ThreadError }) =>
      settle(message.error ? { error: errorOf(message.error) } : { made: message.made! }),
    );
    thread.on('error', (err: Error & { code?: string }) =>
      settle({
        error:
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new Error(
                `the comparison needs more than its thread's ${heapMb} MB of heap (--comparison-heap-mb raises it)`,
              )
            : new Error(`the comparison's thread failed: ${err.message}`),
      }),
    );
    thread.on('exit', (code) =>
      settle({ error: new Error(`the comparison's thread exited (code ${code}) before it was made`) }),
    );
  });
}
