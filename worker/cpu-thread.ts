// Synchronous CPU work on what a target sent, in a thread the job's time bound stops: the event
// loop (a worker's lock renewals, the other jobs' sockets) never waits on it, and at the bound
// the job ends with the parts already measured. A native call in progress (one brotli run)
// finishes in the background before the thread exits; its result is not waited for.
import { Worker } from 'node:worker_threads';

/** The thread's heap: the work holds Buffers (outside the heap), so this is generous. */
const THREAD_HEAP_MB = 128;

export interface CpuTaskOutcome<Part> {
  parts: Part[];
  /** Why the work stopped before it was done: the job's bound, or the thread's own failure. */
  stopped?: string;
}

/**
 * Runs `task` of `moduleUrl` in a new thread, collecting the `part`s it posts (`{row}`) until it
 * posts `{done: true}`, fails, or `signal` aborts.
 */
export function runCpuTask<Part>(
  moduleUrl: URL,
  task: string,
  input: unknown,
  signal: AbortSignal,
): Promise<CpuTaskOutcome<Part>> {
  const parts: Part[] = [];
  if (signal.aborted) return Promise.resolve({ parts, stopped: "the job's time bound" });
  return new Promise((resolve) => {
    const thread = new Worker(moduleUrl, {
      workerData: { cpuTask: task, input },
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    });
    let settled = false;
    const finish = (stopped?: string) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      void thread.terminate();
      resolve(stopped ? { parts, stopped } : { parts });
    };
    const onAbort = () => finish("the job's time bound");
    signal.addEventListener('abort', onAbort, { once: true });
    thread.on('message', (message: { row?: Part; done?: boolean }) => {
      if (message.row !== undefined) parts.push(message.row);
      if (message.done) finish();
    });
    thread.on('error', (err) => finish(`the thread failed: ${err.message}`));
    thread.on('exit', (code) => finish(code === 0 ? undefined : `the thread exited with code ${code}`));
  });
}
