// The compression probe's CPU thread (started by worker/cpu-thread.ts): the synchronous work on
// a body a target sent, which the job's bound must be able to stop. Each task posts its parts
// (`{row}`) as they are done, then `{done: true}`.
import { parentPort, workerData } from 'node:worker_threads';
import { identifyServerGzip } from './gzip-levels.js';
import { measureLevels, type LevelTableTask } from './level-table.js';

export const CPU_TASKS_MODULE = new URL('./cpu-tasks.js', import.meta.url);

export interface ServerGzipTask {
  decoded: Uint8Array;
  encodedBytes: number;
}

const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

// Only in a thread cpu-thread.ts started: the main thread imports this module for its names.
if (parentPort && workerData?.cpuTask) {
  const port = parentPort;
  const { cpuTask: task, input } = workerData as { cpuTask: string; input: unknown };
  if (task === 'level-table') measureLevels(input as LevelTableTask, (row) => port.postMessage({ row }));
  else if (task === 'server-gzip') {
    const { decoded, encodedBytes } = input as ServerGzipTask;
    port.postMessage({ row: identifyServerGzip(asBuffer(decoded), encodedBytes) });
  } else throw new Error(`no CPU task "${task}"`);
  port.postMessage({ done: true });
}
