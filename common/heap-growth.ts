// How much V8's old space may grow past what its last full collection kept. V8's default on a
// machine with memory to spare lets it grow to ~4x: a worker's ~30 MB of live heap took 100 MB
// more before each collection (its RSS climbed past 220 MB over 10,000 jobs with nothing
// leaking), and a submit of 100,000 jobs, whose garbage comes fast, peaked at ~400 MB. 20% keeps
// both flat, for ~20 µs of collection per job in a worker and ~10% of a big submit's speed
// (bench/README.md). Read at every collection, so it holds from whenever it is set.
import { setFlagsFromString } from 'node:v8';

const HEAP_GROWING_PERCENT = 20;

/** For processes that run for hours (a worker, the coordinator) or submit big runs (`run --redis`). */
export function boundHeapGrowth(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
