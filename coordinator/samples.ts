// Reading request samples: shared by the run analysis and the run comparison.
import type { Phase, RequestSample } from '../contracts/common.js';

/** A phase's durations over the requests that were answered (a failed request's phases stop wherever it failed). */
export function answeredPhase(samples: readonly Pick<RequestSample, 'phases' | 'error'>[], phase: Phase): number[] {
  // A loop, not flatMap: a comparison of big runs reads this for every sample of every run.
  const values: number[] = [];
  for (const s of samples) {
    const value = s.phases[phase];
    if (!s.error && value !== undefined) values.push(value);
  }
  return values;
}
