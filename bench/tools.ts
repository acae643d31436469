// One function per tool and benchmark: run it against a lab URL, parse what it printed.
// probefleet runs as a child process with the worker's own code (bench/probe-process.ts), so
// every tool is a process of its own and is measured the same way.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { JobPayload } from '../contracts/job.js';
import type { ResultOf } from '../contracts/result.js';
import { parsePlan } from '../coordinator/plan-loader.js';
import { runIdFor, splitPlan } from '../coordinator/split.js';
import { median } from '../common/stats.js';
import { measure, type Measured } from './measure.js';
import type { LayerCost } from './overhead-process.js';

const PROBE_PROCESS = fileURLToPath(new URL('./probe-process.js', import.meta.url));
const UNDICI_PROCESS = fileURLToPath(new URL('./undici-process.js', import.meta.url));
const OVERHEAD_PROCESS = fileURLToPath(new URL('./overhead-process.js', import.meta.url));
const H2_BARE_PROCESS = fileURLToPath(new URL('./h2-bare-process.js', import.meta.url));
/** Runs of the sequential job in one probefleet process. */
export const SEQUENTIAL_RUNS = 30;
export const AUTOCANNON_CLI = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

export interface ToolContext {
  /** The lab server's process, whose CPU time is recorded alongside. */
  serverPid: number;
  /** Write a CPU profile of the probefleet child's job to this file (not for timed runs). */
  profileFile?: string;
  /** Run the tool on this CPU only (bench/measure.ts, pinProcesses says why). */
  cpu?: number;
}

export interface SequentialRun {
  tool: 'probefleet' | 'undici' | 'curl';
  requests: number;
  /** Median per-request time; for probefleet, of its last run (a warm worker). */
  medianMs: number;
  /** probefleet, undici: the median of each run in one process, first (a fresh process) to last. */
  runMediansMs?: number[];
  measured: Measured;
}

export interface LoadRun {
  tool:
    | 'probefleet'
    | 'autocannon'
    | 'wrk'
    | 'probefleet 2 threads'
    | 'node:http2'
    | 'node:http2, undici loaded'
    | 'h2load';
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  p99Ms: number;
  errors: number;
  measured: Measured;
  /** probefleet: its busiest thread's event-loop utilization over the run (0..1). */
  busiest?: number;
}

/** The HTTP/2 load benchmark's shape: connections x streams for a duration. */
export interface H2Shape {
  connections: number;
  streams: number;
  seconds: number;
}

async function jobFor(planYaml: string): Promise<JobPayload> {
  const [job] = splitPlan(await parsePlan(planYaml, 'bench.yaml'), runIdFor('bench', new Date()));
  return job;
}

/** Runs the job `runs` times in one child process (bench/probe-process.ts). */
export async function runProbefleet<K extends 'reuse' | 'load'>(
  job: JobPayload,
  runs: number,
  ctx: ToolContext,
  timeoutMs: number,
): Promise<{ results: ResultOf<K>[]; measured: Measured }> {
  const measured = await measure(process.execPath, [PROBE_PROCESS, JSON.stringify(job), String(runs)], {
    serverPid: ctx.serverPid,
    cpu: ctx.cpu,
    timeoutMs,
    env: ctx.profileFile ? { PROBEFLEET_BENCH_PROFILE: ctx.profileFile } : {},
  });
  const results = JSON.parse(measured.stdout) as ResultOf<K>[];
  const failed = results.find((r) => !r.ok);
  if (failed) throw new Error(`probefleet ${job.probe} failed: ${failed.error?.code} ${failed.error?.message}`);
  return { results, measured };
}

/** `reuse` in `reused` mode: N sequential requests over one keep-alive connection. */
export async function probefleetSequential(url: string, requests: number, ctx: ToolContext): Promise<SequentialRun> {
  const job = await jobFor(`
name: bench-sequential
targets: [{ name: lab, url: "${url}" }]
experiments: [{ probe: reuse, requests: ${requests}, modes: [reused] }]
`);
  // A worker is a long-lived process: its first jobs run while the JIT is still compiling the
  // request path; later ones show what it measures from then on.
  const { results, measured } = await runProbefleet<'reuse'>(job, SEQUENTIAL_RUNS, ctx, 300_000);
  const runMediansMs = results.map((r) => r.summary.phases.total!.p50);
  return {
    tool: 'probefleet',
    requests: results.at(-1)!.summary.requests,
    medianMs: runMediansMs.at(-1)!,
    runMediansMs,
    measured,
  };
}

/** Peak RSS of a bare Node process, and of one that has only loaded the worker's code. */
export async function baselineRss(ctx: ToolContext): Promise<{ nodeKb: number; workerCodeKb: number }> {
  const executeJob = new URL('../worker/execute-job.js', import.meta.url).href;
  const node = await measure(process.execPath, ['-e', ''], { serverPid: ctx.serverPid, timeoutMs: 60_000 });
  const worker = await measure(
    process.execPath,
    ['--input-type=module', '-e', `await import(${JSON.stringify(executeJob)})`],
    { serverPid: ctx.serverPid, timeoutMs: 60_000 },
  );
  return { nodeKb: node.maxRssKb, workerCodeKb: worker.maxRssKb };
}

/** CPU and wall time per request of each layer probefleet adds on top of undici, in one warm process. */
export async function probefleetOverhead(url: string, requests: number, ctx: ToolContext): Promise<LayerCost[]> {
  const job = await jobFor(`
name: bench-overhead
targets: [{ name: lab, url: "${url}" }]
experiments: [{ probe: reuse, requests: ${requests}, modes: [reused] }]
`);
  const measured = await measure(process.execPath, [OVERHEAD_PROCESS, JSON.stringify(job)], {
    serverPid: ctx.serverPid,
    cpu: ctx.cpu,
    timeoutMs: 600_000,
  });
  return JSON.parse(measured.stdout) as LayerCost[];
}

/** A bare undici Client in a loop, run as often as probefleet's job: the floor under probefleet. */
export async function undiciSequential(url: string, requests: number, ctx: ToolContext): Promise<SequentialRun> {
  const measured = await measure(process.execPath, [UNDICI_PROCESS, url, String(requests), String(SEQUENTIAL_RUNS)], {
    serverPid: ctx.serverPid,
    cpu: ctx.cpu,
    timeoutMs: 300_000,
  });
  const runMediansMs = JSON.parse(measured.stdout) as number[];
  return { tool: 'undici', requests, medianMs: runMediansMs.at(-1)!, runMediansMs, measured };
}

/** One curl process, N URLs from a glob: curl reuses its connection; `%{time_total}` per transfer. */
export async function curlSequential(url: string, requests: number, ctx: ToolContext): Promise<SequentialRun> {
  const measured = await measure(
    'curl',
    ['-s', '-o', '/dev/null', '-w', '%{time_total}\\n', `${url}?n=[1-${requests}]`],
    { serverPid: ctx.serverPid, cpu: ctx.cpu, timeoutMs: 120_000 },
  );
  const times = measured.stdout
    .trim()
    .split('\n')
    .map((line) => Number(line) * 1000);
  if (times.length !== requests || times.some((t) => !Number.isFinite(t)))
    throw new Error(`curl printed ${times.length} times, expected ${requests}`);
  return { tool: 'curl', requests, medianMs: median(times), measured };
}

export async function probefleetLoad(
  url: string,
  connections: number,
  seconds: number,
  ctx: ToolContext,
): Promise<LoadRun> {
  const job = await jobFor(`
name: bench-load
jobTimeoutSeconds: ${Math.ceil(seconds) + 60}
targets: [{ name: lab, url: "${url}" }]
experiments: [{ probe: load, connections: ${connections}, durationSeconds: ${seconds}, modes: [reused] }]
`);
  return loadRunOf(await runProbefleet<'load'>(job, 1, ctx, (seconds + 60) * 1000), 'probefleet');
}

/** A probefleet load job's figures as a LoadRun, with how busy its busiest thread was. */
function loadRunOf(
  { results, measured }: { results: ResultOf<'load'>[]; measured: Measured },
  tool: LoadRun['tool'],
): LoadRun {
  const [result] = results;
  const d = result.details!;
  return {
    tool,
    requests: d.completed,
    seconds: result.summary.durationMs / 1000,
    requestsPerSecond: d.requestsPerSecond,
    p99Ms: d.latencyMs.p99,
    errors: result.summary.errors,
    measured,
    busiest: Math.max(...d.client.eventLoopUtilization),
  };
}

/** The `load` probe in h2 mode (closed loop) on `threads` threads. */
export async function probefleetH2Load(
  url: string,
  { connections, streams, seconds }: H2Shape,
  threads: number,
  ctx: ToolContext,
): Promise<LoadRun> {
  const job = await jobFor(`
name: bench-h2-load
jobTimeoutSeconds: ${Math.ceil(seconds) + 60}
targets: [{ name: nginx, url: "${url}", tls: { insecure: true } }]
experiments: [{ probe: load, connections: ${connections}, streams: ${streams}, durationSeconds: ${seconds}, modes: [h2], threads: ${threads} }]
`);
  return loadRunOf(
    await runProbefleet<'load'>(job, 1, ctx, (seconds + 60) * 1000),
    threads === 1 ? 'probefleet' : 'probefleet 2 threads',
  );
}

/** The same shape as a bare node:http2 loop (bench/h2-bare-process.ts): the floor under probefleet's h2 mode. */
export async function bareH2Load(
  url: string,
  { connections, streams, seconds }: H2Shape,
  ctx: ToolContext,
  undiciLoaded = false,
) {
  const measured = await measure(
    process.execPath,
    [
      H2_BARE_PROCESS,
      url,
      String(connections),
      String(streams),
      String(seconds),
      ...(undiciLoaded ? ['--undici-loaded'] : []),
    ],
    { serverPid: ctx.serverPid, timeoutMs: (seconds + 60) * 1000 },
  );
  const out = JSON.parse(measured.stdout) as { requests: number; seconds: number };
  return {
    tool: undiciLoaded ? 'node:http2, undici loaded' : 'node:http2',
    requests: out.requests,
    seconds: out.seconds,
    requestsPerSecond: out.requests / out.seconds,
    p99Ms: Number.NaN,
    errors: 0,
    measured,
  } satisfies LoadRun;
}

/** nghttp2's h2load: `-c C -m S -D seconds` (one thread). */
export async function h2loadRun(url: string, { connections, streams, seconds }: H2Shape, ctx: ToolContext) {
  const measured = await measure('h2load', [`-c${connections}`, `-m${streams}`, '-D', String(seconds), url], {
    serverPid: ctx.serverPid,
    timeoutMs: (seconds + 60) * 1000,
  });
  const out = measured.stdout;
  const finished = /finished in ([\d.]+)(ms|s), ([\d.]+) req\/s/.exec(out);
  const requests = /requests: \d+ total, \d+ started, (\d+) done, \d+ succeeded, (\d+) failed, (\d+) errored/.exec(out);
  if (!finished || !requests) throw new Error(`unreadable h2load output:\n${out}`);
  return {
    tool: 'h2load',
    requests: Number(requests[1]),
    seconds: Number(finished[1]) / (finished[2] === 'ms' ? 1000 : 1),
    requestsPerSecond: Number(finished[3]),
    p99Ms: Number.NaN,
    errors: Number(requests[2]) + Number(requests[3]),
    measured,
  } satisfies LoadRun;
}

export async function autocannonLoad(
  url: string,
  connections: number,
  seconds: number,
  ctx: ToolContext,
): Promise<LoadRun> {
  const measured = await measure(
    process.execPath,
    [AUTOCANNON_CLI, '-c', String(connections), '-d', String(seconds), '-j', url],
    {
      serverPid: ctx.serverPid,
      timeoutMs: (seconds + 60) * 1000,
    },
  );
  const out = JSON.parse(measured.stdout) as {
    requests: { total: number };
    duration: number;
    latency: { p99: number };
    errors: number;
    timeouts: number;
  };
  return {
    tool: 'autocannon',
    requests: out.requests.total,
    seconds: out.duration,
    requestsPerSecond: out.requests.total / out.duration,
    p99Ms: out.latency.p99,
    errors: out.errors + out.timeouts,
    measured,
  };
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function wrkDuration(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!m) throw new Error(`unreadable wrk duration "${text}"`);
  return Number(m[1]) * UNIT_MS[m[2]];
}

/** wrk with one thread (like the other two tools' one event loop), latency distribution on. */
export async function wrkLoad(url: string, connections: number, seconds: number, ctx: ToolContext): Promise<LoadRun> {
  const measured = await measure('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', url], {
    serverPid: ctx.serverPid,
    timeoutMs: (seconds + 60) * 1000,
  });
  const out = measured.stdout;
  const total = /(\d+) requests in ([\d.]+\w+),/.exec(out);
  const p99 = /^\s*99%\s+([\d.]+\w+)\s*$/m.exec(out);
  if (!total || !p99) throw new Error(`unreadable wrk output:\n${out}`);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const requests = Number(total[1]);
  const runSeconds = wrkDuration(total[2]) / 1000;
  return {
    tool: 'wrk',
    requests,
    seconds: runSeconds,
    requestsPerSecond: requests / runSeconds,
    p99Ms: wrkDuration(p99[1]),
    errors: socketErrors ? socketErrors.slice(1).reduce((n, v) => n + Number(v), 0) : 0,
    measured,
  };
}
