// Sequential request loops, bounded in count, in time (the job's signal) and by failures.
import { performance } from 'node:perf_hooks';
import { PHASES, type PhaseTimes, type ProbeError, type RequestSample } from '../../contracts/common.js';
import type { Summary } from '../../contracts/result.js';
import { percentiles } from '../../common/stats.js';

/** A target that fails this many times in a row is not worth asking again. */
export const MAX_CONSECUTIVE_FAILURES = 3;

/** What a sequence step returns: a sample that may carry its failure. */
interface Sample {
  error?: ProbeError;
  phases: PhaseTimes;
}

export interface SequenceOutcome<S extends Sample = RequestSample> {
  samples: S[];
  durationMs: number;
  /** Why the loop stopped before `count`, why nothing it did succeeded, or that a response
   * failed the target's checks; null otherwise. */
  stoppedEarly: ProbeError | null;
}

export async function runSequence<S extends Sample = RequestSample>(
  count: number,
  signal: AbortSignal,
  request: (seq: number) => Promise<S>,
  /** What one step is, for messages. */
  noun = 'requests',
): Promise<SequenceOutcome<S>> {
  const samples: S[] = [];
  const start = performance.now();
  let failuresInARow = 0;
  let stoppedEarly: ProbeError | null = null;
  for (let seq = 0; seq < count; seq++) {
    if (signal.aborted) {
      stoppedEarly = { code: 'DEADLINE_EXCEEDED', message: `time bound reached after ${seq} of ${count} ${noun}` };
      break;
    }
    const sample = await request(seq);
    samples.push(sample);
    failuresInARow = sample.error ? failuresInARow + 1 : 0;
    if (failuresInARow >= MAX_CONSECUTIVE_FAILURES && sample.error) {
      stoppedEarly = {
        code: sample.error.code,
        message: `stopped after ${failuresInARow} failed ${noun} in a row: ${sample.error.message}`,
      };
      break;
    }
  }
  const last = samples.at(-1);
  if (!stoppedEarly && last?.error && samples.every((s) => s.error)) {
    // Too few to stop early, but nothing was measured: that is a failure too.
    stoppedEarly = { code: last.error.code, message: `all ${samples.length} ${noun} failed: ${last.error.message}` };
  }
  stoppedEarly ??= failedChecks(samples, noun);
  return { samples, durationMs: performance.now() - start, stoppedEarly };
}

/** A response that fails the target's checks fails its job, however many others passed. */
export function failedChecks(samples: readonly Sample[], noun = 'requests'): ProbeError | null {
  const failed = samples.filter((s) => s.error?.code === 'RESPONSE_CHECK_FAILED');
  if (failed.length === 0) return null;
  return {
    code: 'RESPONSE_CHECK_FAILED',
    message: `${failed.length} of ${samples.length} ${noun}: ${failed[0].error!.message}`,
  };
}

/** Percentiles per phase over the requests that succeeded. */
export function summarize(samples: readonly Sample[], connectionsOpened: number, durationMs: number): Summary {
  const answered = samples.filter((s) => !s.error);
  const phases: Summary['phases'] = {};
  for (const phase of PHASES) {
    const stats = percentiles(answered.flatMap((s) => (s.phases[phase] === undefined ? [] : [s.phases[phase]])));
    if (stats) phases[phase] = stats;
  }
  return { requests: samples.length, errors: samples.length - answered.length, connectionsOpened, durationMs, phases };
}
