// V8's heap settings for `probefleet worker`, applied when this module is evaluated: the worker
// command imports it first, so they already hold while the rest of the worker's code loads
// (bench/README.md, worker memory; bench/worker-memory.ts).
import { setFlagsFromString } from 'node:v8';
import { boundHeapGrowth } from '../common/heap-growth.js';

boundHeapGrowth();
// The young generation keeps its first size instead of doubling while the code loads and warms
// up: that growth would be the worker's peak RSS (160 MB at start-up, for a second). A job's objects
// die young either way: no measurable CPU per job. Read whenever V8 would grow it.
setFlagsFromString('--semi-space-growth-factor=1');
