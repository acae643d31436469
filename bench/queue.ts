// The queue benchmark: how fast the coordinator puts a plan's jobs into Redis, and how fast two
// region workers take light jobs through BullMQ, on a redis-server this benchmark starts on a
// free loopback port (nothing on disk) and flushes after every run. There is no peer tool for
// queues; redis-benchmark LPUSH on the same server, in the same round, is the ceiling for Redis
// round trips that each figure is set against.
import { execFile, spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { bullmqConnection, redisOptions } from '../common/redis.js';
import { freeLoopbackPort, startRedisServer } from '../common/redis-server.js';
import { DEFAULT_QUEUE_PREFIX, regionQueueName, reportKeys, RUNS_QUEUE } from '../contracts/queues.js';
import { parsePlan } from '../coordinator/plan-loader.js';
import { runIdFor, splitPlan } from '../coordinator/split.js';
import type { ProbeResult } from '../contracts/result.js';
import type { ProbeBatch } from '../contracts/job.js';
import type { BatchDone } from '../worker/queue-worker.js';
import { TIED_TO_THIS_PROCESS } from '../regions/system.js';
import type { EnqueueMode, EnqueueTiming } from './enqueue-process.js';
import { measure, processCpuSeconds, type Measured } from './measure.js';
import { runProbefleet, type ToolContext } from './tools.js';

const ENQUEUE_PROCESS = fileURLToPath(new URL('./enqueue-process.js', import.meta.url));
const BARE_WORKER_PROCESS = fileURLToPath(new URL('./bare-worker-process.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../bin/probefleet.js', import.meta.url));

/** A plan's shape: regions × targets × experiments × `reuse` modes jobs. */
export interface PlanShape {
  regions: number;
  targets: number;
  experiments: number;
  /** With one request per job, `reused` and `new` do the same: one connection, one request. */
  modes: ('reused' | 'new')[];
}
/** 100,000 jobs, within the plan schema's limits (50 regions, 100 targets, 50 experiments). */
export const ENQUEUE_SHAPE: PlanShape = { regions: 50, targets: 100, experiments: 20, modes: ['reused'] };
/** 10,000 jobs in one region, for its two workers. */
export const END_TO_END_SHAPE: PlanShape = { regions: 1, targets: 100, experiments: 50, modes: ['reused', 'new'] };
export const END_TO_END_WORKERS = 2;
const END_TO_END_REGION = 'r0';
/** Bound on one end-to-end run, far above what 10,000 light jobs take. */
const END_TO_END_TIMEOUT_MS = 300_000;

export const jobsOf = (shape: PlanShape) => shape.regions * shape.targets * shape.experiments * shape.modes.length;

/** Every job a `reuse` probe of one request against `url`; experiments differ only in their
 * timeout, so that each has its own job id. */
export function queuePlanYaml(name: string, shape: PlanShape, url: string): string {
  const regions = Array.from({ length: shape.regions }, (_, i) => `r${i}`).join(', ');
  const targets = Array.from({ length: shape.targets }, (_, i) => `  - { name: t${i}, url: "${url}" }`);
  const experiments = Array.from(
    { length: shape.experiments },
    (_, i) => `  - { probe: reuse, requests: 1, modes: [${shape.modes.join(', ')}], timeoutMs: ${5_000 + i} }`,
  );
  return [`name: ${name}`, `regions: [${regions}]`, 'targets:', ...targets, 'experiments:', ...experiments, ''].join(
    '\n',
  );
}

export interface BenchRedis {
  url: string;
  pid: number;
  /** FLUSHALL: every run starts from an empty server. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** A redis-server of the benchmark's own on a free loopback port, holding nothing on disk, and
 * killed by the kernel if this process dies first. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const port = await freeLoopbackPort();
  const url = `redis://127.0.0.1:${port}`;
  const server = await startRedisServer({
    launcher: TIED_TO_THIS_PROCESS,
    args: ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
    url,
  });
  const client = new Redis(redisOptions({ url }));
  return {
    url,
    pid: server.process.pid!,
    flush: async () => void (await client.flushall()),
    stop: async () => {
      await client.flushall().catch(() => {});
      client.disconnect();
      await server.stop();
    },
  };
}

/** How the enqueue benchmark submits (bench/enqueue-process.ts, which runs as it is imported). */
export const ENQUEUE_MODES: readonly EnqueueMode[] = ['batched', 'per-job'];

export interface EnqueueRun extends EnqueueTiming {
  tool: EnqueueMode;
  jobsPerSecond: number;
  /** The enqueuing process; serverCpuSeconds is Redis's. */
  measured: Measured;
}

/** Node's options for a child that writes a CPU profile into `dir` when it exits (not for timed runs). */
const profileArgs = (dir?: string) => (dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []);

async function enqueue(
  redis: BenchRedis,
  mode: EnqueueMode,
  planYaml: string,
  profileDir?: string,
): Promise<EnqueueRun> {
  const measured = await measure(
    process.execPath,
    [...profileArgs(profileDir), ENQUEUE_PROCESS, redis.url, mode, planYaml],
    { serverPid: redis.pid, timeoutMs: 600_000 },
  );
  const timing = JSON.parse(measured.stdout) as EnqueueTiming;
  return { tool: mode, ...timing, jobsPerSecond: timing.jobs / (timing.enqueueMs / 1000), measured };
}

/** Probe jobs waiting in the plan's region queues (in their batches), to check that every job arrived. */
async function waitingJobs(url: string, regions: number): Promise<number> {
  let total = 0;
  for (let i = 0; i < regions; i++) {
    const queue = new Queue(regionQueueName(`r${i}`), {
      connection: bullmqConnection({ url }),
      prefix: DEFAULT_QUEUE_PREFIX,
    });
    for (const batch of await queue.getWaiting()) total += (batch.data as ProbeBatch).jobs.length;
    await queue.close();
  }
  return total;
}

/** Split and enqueue ENQUEUE_SHAPE's 100,000 jobs one way; checks they all arrived, then flushes. */
export async function enqueueRun(redis: BenchRedis, mode: EnqueueMode, profileDir?: string): Promise<EnqueueRun> {
  // The targets are never contacted: these jobs are enqueued, not run.
  const run = await enqueue(
    redis,
    mode,
    queuePlanYaml('bench-enqueue', ENQUEUE_SHAPE, 'http://127.0.0.1:1/'),
    profileDir,
  );
  const waiting = await waitingJobs(redis.url, ENQUEUE_SHAPE.regions);
  await redis.flush();
  if (run.jobs !== jobsOf(ENQUEUE_SHAPE) || waiting !== run.jobs)
    throw new Error(`${mode}: split ${run.jobs} jobs, ${waiting} waiting in Redis; expected ${jobsOf(ENQUEUE_SHAPE)}`);
  return run;
}

export interface EndToEndRun {
  /** probefleet: `probefleet worker` processes; bullmq-undici: bare BullMQ workers making the same
   * one undici request per job (the fair floor); bullmq: bare BullMQ workers doing nothing. Each
   * takes one probe job per BullMQ job; `-batched`: the run submitted as the coordinator does by
   * default, in batches of probe jobs (the floor making one request per probe job of a batch). */
  tool: 'probefleet' | 'bullmq-undici' | 'bullmq' | 'probefleet-batched' | 'bullmq-undici-batched';
  jobs: number;
  /** Jobs that failed, or whose probe result was not ok. */
  errors: number;
  /** From the first job's start to the last job's end, as the jobs' results record them (a job
   * is removed from Redis as it completes; its result stays in the run's parent job). */
  seconds: number;
  jobsPerSecond: number;
  /** Both workers' CPU time over the run, and the larger peak RSS. */
  workerCpuSeconds: number;
  workerPeakRssKb: number;
  redisCpuSeconds: number;
  /** Submitting the 10,000 jobs (coordinator/flow.ts submitRun), while the workers took them. */
  enqueue: EnqueueRun;
  loadAverage: number;
}

/** Kernel high-water mark of a live process's RSS. */
function peakRssKb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

/** The results probefleet's workers saved for a run. */
async function savedResults(url: string, runId: string): Promise<ProbeResult[]> {
  const client = new Redis(redisOptions({ url }));
  try {
    return (await client.hvals(reportKeys.results(DEFAULT_QUEUE_PREFIX, runId))).map(
      (json) => JSON.parse(json) as ProbeResult,
    );
  } finally {
    client.disconnect();
  }
}

/** END_TO_END_SHAPE's 10,000 jobs, a one-request `reuse` probe each against `url`, submitted as
 * the coordinator does while two workers of the region wait; timed from the jobs' own records. */
export async function endToEndRun(
  redis: BenchRedis,
  url: string,
  tool: EndToEndRun['tool'],
  profileDir?: string,
  /** Appended to each `probefleet worker` command (a Pushgateway, say). */
  workerArgs: string[] = [],
): Promise<EndToEndRun> {
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-bench-queue-'));
  const queue = new Queue(regionQueueName(END_TO_END_REGION), {
    connection: bullmqConnection({ url: redis.url }),
    prefix: DEFAULT_QUEUE_PREFIX,
  });
  const runs = new Queue(RUNS_QUEUE, {
    connection: bullmqConnection({ url: redis.url }),
    prefix: DEFAULT_QUEUE_PREFIX,
  });
  const [launcher, ...launcherArgs] = TIED_TO_THIS_PROCESS;
  const isProbefleet = tool.startsWith('probefleet');
  const workers = Array.from({ length: END_TO_END_WORKERS }, (_, i) => {
    const logFile = path.join(dir, `worker-${i}.log`);
    const fd = openSync(logFile, 'w');
    const args = isProbefleet
      ? [CLI, 'worker', '--region', END_TO_END_REGION, '--redis', redis.url, '--allow-loopback', ...workerArgs]
      : [BARE_WORKER_PROCESS, redis.url, END_TO_END_REGION, ...(tool === 'bullmq' ? [] : [url])];
    const child = spawn(launcher, [...launcherArgs, process.execPath, ...profileArgs(profileDir), ...args], {
      stdio: ['ignore', 'ignore', fd],
    });
    closeSync(fd);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return { child, pid: child.pid!, logFile, exited };
  });
  const logTail = () => workers.map((w) => `${w.logFile}:\n${readFileSync(w.logFile, 'utf8').slice(-2000)}`).join('\n');
  try {
    for (let waited = 0; (await queue.getWorkersCount()) < END_TO_END_WORKERS; waited += 100) {
      if (waited > 30_000) throw new Error(`the ${tool} workers did not connect within 30 s:\n${logTail()}`);
      await sleep(100);
    }
    const cpuBefore = workers.map((w) => processCpuSeconds(w.pid));
    const redisCpuBefore = processCpuSeconds(redis.pid);
    const enqueueRun = await enqueue(
      redis,
      tool.endsWith('-batched') ? 'batched' : 'per-job',
      queuePlanYaml('bench-e2e', END_TO_END_SHAPE, url),
    );
    const expected = jobsOf(END_TO_END_SHAPE);
    // The run's parent job (the only run: Redis is flushed after each) counts its children done.
    const [parent] = await runs.getJobs(['waiting-children']);
    if (!parent) throw new Error(`${tool}: the run's parent job is not in Redis`);
    for (let waited = 0; ; waited += 250) {
      const { unprocessed = 0 } = await parent.getDependenciesCount({ unprocessed: true });
      if (unprocessed === 0) break;
      if (waited > END_TO_END_TIMEOUT_MS)
        throw new Error(
          `${tool}: ${expected - unprocessed} of ${expected} jobs done after ${END_TO_END_TIMEOUT_MS / 1000} s:\n${logTail()}`,
        );
      if (workers.some((w) => w.child.exitCode !== null)) throw new Error(`a ${tool} worker exited:\n${logTail()}`);
      await sleep(250);
    }
    const workerCpuSeconds = workers.reduce((sum, w, i) => sum + processCpuSeconds(w.pid) - cpuBefore[i], 0);
    const redisCpuSeconds = processCpuSeconds(redis.pid) - redisCpuBefore;
    const workerPeakRssKb = Math.max(...workers.map((w) => peakRssKb(w.pid)));
    // Both kinds of worker leave {startedAt, finishedAt}: probefleet's results, saved with the run
    // or returned by their batch (worker/run-results.ts), or the bare worker's stamps, its return values.
    const returned = Object.values(await parent.getChildrenValues());
    const completed = (
      isProbefleet
        ? [...(await savedResults(redis.url, parent.id!)), ...returned.flatMap((r) => (r as BatchDone).results)]
        : returned
    ) as (Pick<ProbeResult, 'startedAt' | 'finishedAt'> & Partial<ProbeResult> & { jobs?: number })[];
    // A bare worker's stamps cover a batch: its number of probe jobs.
    const done = isProbefleet ? completed.length : completed.reduce((sum, r) => sum + (r.jobs ?? 1), 0);
    const failed = Object.keys(await parent.getIgnoredChildrenFailures()).length;
    const notOk = isProbefleet ? completed.filter((result) => !result.ok).length : 0;
    const seconds =
      (Math.max(...completed.map((r) => Date.parse(r.finishedAt))) -
        Math.min(...completed.map((r) => Date.parse(r.startedAt)))) /
      1000;
    return {
      tool,
      jobs: done + failed,
      errors: failed + notOk,
      seconds,
      jobsPerSecond: done / seconds,
      workerCpuSeconds,
      workerPeakRssKb,
      redisCpuSeconds,
      enqueue: enqueueRun,
      loadAverage: enqueueRun.measured.loadAverage,
    };
  } finally {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
    await Promise.all([queue.close(), runs.close()]);
    await redis.flush();
    await rm(dir, { recursive: true, force: true });
  }
}

export interface ProbeLoopRun {
  jobs: number;
  /** From the first job's start to the last one's end, as the results say. */
  seconds: number;
  jobsPerSecond: number;
  /** The process's, start-up included. */
  measured: Measured;
}

/** Jobs a loop runs in one process. */
export const PROBE_LOOP_JOBS = 3_000;

/** One of the end-to-end jobs, run PROBE_LOOP_JOBS times in a loop by `executeJob` in one process,
 * without a queue (bench/probe-process.ts): two workers cannot take jobs faster than twice this. */
export async function probeLoopRun(url: string, ctx: ToolContext): Promise<ProbeLoopRun> {
  const loaded = await parsePlan(queuePlanYaml('bench-loop', END_TO_END_SHAPE, url), 'bench-loop.yaml');
  // probe-process runs jobs as the embedded runner does, in its region "local".
  const job = { ...splitPlan(loaded, runIdFor('bench-loop', new Date()))[0], region: 'local' };
  const { results, measured } = await runProbefleet<'reuse'>(job, PROBE_LOOP_JOBS, ctx, 600_000);
  const seconds = (Date.parse(results.at(-1)!.finishedAt) - Date.parse(results[0].startedAt)) / 1000;
  return { jobs: results.length, seconds, jobsPerSecond: results.length / seconds, measured };
}

export interface RedisCeiling {
  /** LPUSH/s, 50 clients, 100 commands per pipeline: how fast Redis takes pipelined writes. */
  lpushPipelined: number;
  /** LPUSH/s, 2 clients, one command at a time: the round trips two workers could make. */
  lpushTwoClients: number;
}

async function lpushPerSecond(url: string, args: string[]): Promise<number> {
  const { hostname, port } = new URL(url);
  const { stdout } = await promisify(execFile)(
    'redis-benchmark',
    ['-h', hostname, '-p', port, '-t', 'lpush', '--csv', ...args],
    { timeout: 60_000 },
  );
  const row = stdout.split('\n').find((line) => line.startsWith('"LPUSH"'));
  const rps = Number(row?.split(',')[1]?.replace(/"/g, ''));
  if (!Number.isFinite(rps) || rps <= 0) throw new Error(`unreadable redis-benchmark output:\n${stdout}`);
  return rps;
}

export async function redisCeiling(redis: BenchRedis): Promise<RedisCeiling> {
  const lpushPipelined = await lpushPerSecond(redis.url, ['-n', '1000000', '-c', '50', '-P', '100']);
  const lpushTwoClients = await lpushPerSecond(redis.url, ['-n', '50000', '-c', '2']);
  await redis.flush();
  return { lpushPipelined, lpushTwoClients };
}

/** One round of the queue benchmark: the ceiling, then both ways of enqueuing, then both kinds of worker. */
export interface QueueRound {
  ceiling: RedisCeiling;
  probeLoop: ProbeLoopRun;
  enqueue: EnqueueRun[];
  endToEnd: EndToEndRun[];
}
