// V8's heap settings for a process that runs jobs for hours (`probefleet worker`), applied when
// this module is evaluated: the worker command imports it first, so they already hold while the
// rest of the worker's code loads (bench/README.md, worker memory; bench/worker-memory.ts).
import { setFlagsFromString } from 'node:v8';

/**
 * How much the old space may grow past what the last full collection kept. V8's default on a
 * machine with memory to spare let a worker's ~30 MB of live heap take 100 MB more before each
 * collection: its RSS climbed past 220 MB over 10,000 jobs with nothing leaking. 20% keeps it flat
 * for ~20 µs of collection per job. Read at every collection.
 */
const HEAP_GROWING_PERCENT = 20;

setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
// The young generation keeps its first size instead of doubling while the code loads and warms
// up: that growth was the worker's peak RSS (160 MB at start-up, for a second). A job's objects
// die young either way. Read whenever V8 would grow it.
setFlagsFromString('--semi-space-growth-factor=1');
