// One load over several threads, so a worker's every core can send it: the connections are
// shared out (HTTP/1.1: share 0 runs on the calling thread, each other in a worker thread of its
// own; HTTP/2: every share in a worker thread, where no undici is loaded, bench/README.md),
// every share starts at one instant and takes request numbers from one shared counter (one
// schedule, one request bound), and their counts and HDR histograms are added into one outcome.
// A thread has no target policy of its own: it asks the calling thread for each connection's
// addresses, so lookups, their timing and the policy's decisions stay in one place.
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { ErrorCode } from '../../contracts/common.js';
import { type EncodedHistogram, weightiestStop } from '../../contracts/probes/load.js';
import {
  decodeHistogram,
  encodeHistogram,
  newLatencyHistogram,
  type Histogram,
} from '../../common/latency-histogram.js';
import { TargetRefusedError, type AddressResolver } from '../target-policy.js';
import { AltSvcLog } from './alt-svc.js';
import { generateLoad, type LoadOptions, type LoadOutcome } from './load-generator.js';

/** What a thread's share is given: the options that are data, and the shared counter. */
type ShareOptions = Omit<LoadOptions, 'signal' | 'policy' | 'altSvc' | 'shared'>;

/** The outcome of a load run over `threads` threads: per thread, how busy its event loop was. */
export interface ThreadedLoadOutcome extends LoadOutcome {
  threads: number;
  /** One per thread, in share order. */
  eventLoopUtilizations: number[];
  /** CPU time of the whole process over the run (every thread, and whatever else it ran). */
  cpuSeconds: number;
}

/** How long the shares get, once every thread is ready, to reach the common start. */
const START_MARGIN_MS = 20;

type ToThread = { go: number } | { stop: true } | { addresses: number; value?: string[]; error?: WireError };
type FromThread =
  | { ready: true }
  | { lookup: number; host: string }
  | { done: EncodedOutcome; altSvc: string[] }
  | { failed: string };
/** An error crossing threads: its class is lost on the way, its name, message and code are not. */
interface WireError {
  name: string;
  message: string;
  code?: string;
}
type EncodedOutcome = Omit<LoadOutcome, 'latency' | 'serviceTime'> & {
  latency: EncodedHistogram;
  serviceTime?: EncodedHistogram;
};

/** Runs the load over `threads` threads (at most one per connection); one HTTP/1.1 thread runs it in place. */
export async function generateLoadOnThreads(options: LoadOptions, threads: number): Promise<ThreadedLoadOutcome> {
  const shares = Math.max(1, Math.min(threads, options.connections));
  const cpuBefore = process.cpuUsage();
  // HTTP/2 in a thread of its own even alone: node:http2 runs ~10% slower in a process that has
  // loaded undici (every worker has), and a thread's start-up is before the clock starts.
  const inPlace = options.mode === 'h2' ? 0 : 1;
  if (shares === 1 && inPlace === 1) {
    const outcome = await generateLoad(options);
    return withClient(outcome, [outcome.eventLoopUtilization], 1, cpuBefore);
  }
  const taken = new Int32Array(new SharedArrayBuffer(4));
  const connections = shareOut(options.connections, shares);
  const { signal, policy, altSvc, shared: _, ...data } = options;
  const threadShares = connections
    .slice(inPlace)
    .map((n) => new ThreadShare({ ...data, connections: n }, taken, policy));
  try {
    // Every thread has loaded its code before the clock starts: a thread's start-up is not the target's time.
    await untilAborted(Promise.all(threadShares.map((share) => share.ready)), signal);
    // The job's bound came first: nothing was sent, and the run says it stopped on the deadline.
    if (signal.aborted) {
      const outcome = await generateLoad(options);
      return withClient(outcome, new Array<number>(shares).fill(0), shares, cpuBefore);
    }
    const startAt = performance.timeOrigin + performance.now() + START_MARGIN_MS;
    const stopThreads = () => {
      for (const share of threadShares) share.post({ stop: true });
    };
    signal.addEventListener('abort', stopThreads, { once: true });
    try {
      for (const share of threadShares) share.post({ go: startAt });
      await waitUntil(startAt);
      const outcomes = await Promise.all([
        ...(inPlace ? [generateLoad({ ...options, connections: connections[0], shared: { startAt, taken } })] : []),
        ...threadShares.map((share) => share.outcome),
      ]);
      for (const share of threadShares) for (const value of share.altSvc) altSvc?.note(value);
      return withClient(
        mergeOutcomes(outcomes),
        outcomes.map((o) => o.eventLoopUtilization),
        shares,
        cpuBefore,
      );
    } finally {
      signal.removeEventListener('abort', stopThreads);
    }
  } finally {
    await Promise.all(threadShares.map((share) => share.end()));
  }
}

/** `total` shared out as evenly as it goes, the larger shares first. */
export function shareOut(total: number, shares: number): number[] {
  return Array.from({ length: shares }, (_, i) => Math.floor(total / shares) + (i < total % shares ? 1 : 0));
}

function withClient(
  outcome: LoadOutcome,
  eventLoopUtilizations: number[],
  threads: number,
  cpuBefore: NodeJS.CpuUsage,
): ThreadedLoadOutcome {
  const cpu = process.cpuUsage(cpuBefore);
  return { ...outcome, threads, eventLoopUtilizations, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

function untilAborted(work: Promise<unknown>, signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    signal.addEventListener('abort', resolve, { once: true });
    work.finally(() => signal.removeEventListener('abort', resolve)).then(resolve, resolve);
  });
}

function waitUntil(epochMs: number): Promise<void> {
  const ms = epochMs - (performance.timeOrigin + performance.now());
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/** Counts added, histograms merged; the run lasted as long as its longest share (they started together). */
export function mergeOutcomes(outcomes: readonly LoadOutcome[]): LoadOutcome {
  const [first, ...rest] = outcomes;
  const latency = copyOf(first.latency);
  const serviceTime = first.serviceTime ? copyOf(first.serviceTime) : undefined;
  const merged: LoadOutcome = { ...first, latency, serviceTime, errors: { ...first.errors } };
  merged.statusClasses = [...first.statusClasses];
  merged.protocols = { ...first.protocols };
  for (const o of rest) {
    latency.add(o.latency);
    if (serviceTime && o.serviceTime) serviceTime.add(o.serviceTime);
    merged.sent += o.sent;
    merged.completed += o.completed;
    merged.failed += o.failed;
    merged.bodyBytes += o.bodyBytes;
    merged.connectionsOpened += o.connectionsOpened;
    merged.concurrency += o.concurrency;
    merged.durationMs = Math.max(merged.durationMs, o.durationMs);
    merged.lastError = o.lastError ?? merged.lastError;
    merged.stoppedBy = weightiestStop([merged.stoppedBy, o.stoppedBy]);
    merged.eventLoopUtilization = Math.max(merged.eventLoopUtilization, o.eventLoopUtilization);
    for (const [i, n] of o.statusClasses.entries()) merged.statusClasses[i] += n;
    for (const [code, n] of Object.entries(o.errors) as [ErrorCode, number][])
      merged.errors[code] = (merged.errors[code] ?? 0) + n;
    for (const [protocol, n] of Object.entries(o.protocols))
      merged.protocols[protocol] = (merged.protocols[protocol] ?? 0) + n;
  }
  return merged;
}

function copyOf(histogram: Histogram): Histogram {
  const copy = newLatencyHistogram();
  copy.add(histogram);
  return copy;
}

/** A share of the load in a worker thread, seen from the calling thread. */
class ThreadShare {
  readonly ready: Promise<void>;
  readonly outcome: Promise<LoadOutcome>;
  altSvc: string[] = [];
  private readonly thread: Worker;

  constructor(options: ShareOptions, taken: Int32Array, policy: AddressResolver) {
    this.thread = new Worker(new URL(import.meta.url), { workerData: { loadShare: options, taken } });
    let ready: () => void = () => {};
    this.ready = new Promise<void>((resolve) => (ready = resolve));
    this.outcome = new Promise<LoadOutcome>((resolve, reject) => {
      const fail = (why: string) => {
        ready();
        reject(new Error(`a thread of the load run failed: ${why}`));
      };
      this.thread.on('message', (message: FromThread) => {
        if ('ready' in message) ready();
        else if ('lookup' in message) void this.lookUp(policy, message.lookup, message.host);
        else if ('failed' in message) fail(message.failed);
        else {
          this.altSvc = message.altSvc;
          resolve(decodeOutcome(message.done));
        }
      });
      this.thread.on('error', (err) => fail(err.message));
      this.thread.on('exit', (code) => fail(`it exited with code ${code} before its outcome`));
    });
    // Waited for by the run; a failure before then is seen there too.
    this.outcome.catch(() => {});
  }

  post(message: ToThread): void {
    this.thread.postMessage(message);
  }

  async end(): Promise<void> {
    await this.thread.terminate();
  }

  private async lookUp(policy: AddressResolver, id: number, host: string): Promise<void> {
    try {
      const value = policy.resolveAll ? await policy.resolveAll(host) : [await policy.resolve(host)];
      this.post({ addresses: id, value });
    } catch (err) {
      const { name, message, code } = err as NodeJS.ErrnoException;
      this.post({ addresses: id, error: { name, message, ...(code === undefined ? {} : { code }) } });
    }
  }
}

function encodeOutcome(outcome: LoadOutcome): EncodedOutcome {
  return {
    ...outcome,
    latency: encodeHistogram(outcome.latency),
    serviceTime: outcome.serviceTime ? encodeHistogram(outcome.serviceTime) : undefined,
  };
}

function decodeOutcome(encoded: EncodedOutcome): LoadOutcome {
  return {
    ...encoded,
    latency: decodeHistogram(encoded.latency),
    serviceTime: encoded.serviceTime ? decodeHistogram(encoded.serviceTime) : undefined,
  };
}

/** The thread's side: asks the calling thread for addresses, runs its share from the common start. */
async function runThreadShare(port: NonNullable<typeof parentPort>): Promise<void> {
  const { loadShare, taken } = workerData as { loadShare: ShareOptions; taken: Int32Array };
  const lookups = new Map<number, { resolve: (value: string[]) => void; reject: (err: Error) => void }>();
  let nextLookup = 0;
  const lookUp = (host: string) =>
    new Promise<string[]>((resolve, reject) => {
      const id = nextLookup++;
      lookups.set(id, { resolve, reject });
      port.postMessage({ lookup: id, host } satisfies FromThread);
    });
  const policy: AddressResolver = {
    resolve: async (host) => (await lookUp(host))[0],
    resolveAll: lookUp,
  };
  const stop = new AbortController();
  const altSvc = new AltSvcLog();
  let go: (startAt: number) => void = () => {};
  const started = new Promise<number>((resolve) => (go = resolve));
  port.on('message', (message: ToThread) => {
    if ('go' in message) go(message.go);
    else if ('stop' in message) stop.abort();
    else {
      const pending = lookups.get(message.addresses);
      lookups.delete(message.addresses);
      if (message.error) pending?.reject(errorFrom(message.error));
      else pending?.resolve(message.value ?? []);
    }
  });
  port.postMessage({ ready: true } satisfies FromThread);
  const startAt = await started;
  await waitUntil(startAt);
  const outcome = await generateLoad({
    ...loadShare,
    signal: stop.signal,
    policy,
    altSvc,
    shared: { startAt, taken },
  });
  port.postMessage({ done: encodeOutcome(outcome), altSvc: altSvc.values } satisfies FromThread);
  port.close();
}

/** The policy's refusal keeps its class (the job's error code comes from it); other errors their code. */
function errorFrom(wire: WireError): Error {
  if (wire.name === 'TargetRefusedError') return new TargetRefusedError(wire.message);
  return Object.assign(new Error(wire.message), wire.code === undefined ? {} : { code: wire.code });
}

if (!isMainThread && parentPort && (workerData as { loadShare?: unknown } | undefined)?.loadShare) {
  runThreadShare(parentPort).catch((err: Error) => {
    parentPort?.postMessage({ failed: err.message } satisfies FromThread);
  });
}
