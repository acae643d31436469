// The compression probe's level table: the decoded body compressed and decompressed at each
// level asked for, medians of several runs. Synchronous CPU work of up to seconds per level
// (brotli 11 on 4 MiB), so it runs in the compression probe's CPU thread (worker/cpu-tasks.ts),
// which the job's time bound can stop; each row is handed on as its level completes, so what was
// measured survives.
import { performance } from 'node:perf_hooks';
import {
  codingUnavailable,
  compress,
  CONTENT_CODINGS,
  type ContentCoding,
  decompress,
} from '../common/content-coding.js';
import { median } from '../common/stats.js';
import type { LevelRow } from '../contracts/probes/compression.js';

export interface LevelTableTask {
  input: Uint8Array;
  levels: Record<ContentCoding, number[]>;
  repetitions: number;
}

/** Each level stops after this long once it has MIN_LEVEL_RUNS runs (or after one run three times as long). */
const LEVEL_BUDGET_MS = 1000;
const MIN_LEVEL_RUNS = 3;

/** Median time of `fn`, over `repetitions` runs or until the budget is spent (at least MIN_LEVEL_RUNS). */
function timeRuns<T>(repetitions: number, fn: () => T): { medianMs: number; runs: number; last: T } {
  const times: number[] = [];
  const start = performance.now();
  let last!: T;
  while (times.length < repetitions) {
    const t = performance.now();
    last = fn();
    times.push(performance.now() - t);
    const elapsed = performance.now() - start;
    if (elapsed > LEVEL_BUDGET_MS && (times.length >= MIN_LEVEL_RUNS || elapsed > 3 * LEVEL_BUDGET_MS)) break;
  }
  return { medianMs: median(times), runs: times.length, last };
}

/** The table's rows, each handed to `onRow` as it is measured. */
export function measureLevels({ input, levels, repetitions }: LevelTableTask, onRow: (row: LevelRow) => void): void {
  const body = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  for (const coding of CONTENT_CODINGS) {
    if (codingUnavailable(coding)) continue;
    for (const level of levels[coding]) {
      const packed = timeRuns(repetitions, () => compress(coding, body, level));
      const unpacked = timeRuns(packed.runs, () => decompress(coding, packed.last, body.length));
      onRow({
        coding,
        level,
        bytes: packed.last.length,
        ratio: packed.last.length / body.length,
        compressMs: packed.medianMs,
        decompressMs: unpacked.medianMs,
        runs: Math.min(packed.runs, unpacked.runs),
      });
    }
  }
}
