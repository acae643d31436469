// Reading request samples: shared by the run analysis and the run comparison.
import type { Phase, RequestSample } from '../contracts/common.js';

/** A phase's durations over the requests that were answered (a failed request's phases stop wherever it failed). */
export function answeredPhase(samples: readonly Pick<RequestSample, 'phases' | 'error'>[], phase: Phase): number[] {
  return samples.flatMap((s) => (s.error || s.phases[phase] === undefined ? [] : [s.phases[phase]]));
}
