// A fleet of real probefleet processes on emulated regions, as `probefleet demo` runs it: a
// redis-server of its own on this machine, a coordinator, and one worker per region inside that
// region's namespace, each started with the real CLI as a user would in separate terminals; runs
// go through `probefleet run --redis`.
//
//   this machine:  redis-server 127.0.0.1:P, the coordinator, `probefleet run --redis`
//   each region:   worker (real-time priority) ── 127.0.0.1:P, port relay, no delay ──▶ Redis
//                         │                       (and the Pushgateway, when the demo has one)
//                         └──────── its delayed link ────────▶ the lab on the target host
//
// Every process is tied to this one (tiedToThisProcess): if it dies, even by SIGKILL, they die
// with it; the regions' own cleanup (cleanup.ts) removes the namespaces. Children run in their
// own process groups, so a Ctrl-C reaches only this process, which then removes everything.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { JOB_KEY_ENV } from '../common/job-signature.js';
import type { Logger } from '../common/log.js';
import { freeLoopbackPort, startRedisServer, type RedisServer } from '../common/redis-server.js';
import { TARGET_ALLOWANCES, type EmulatedRegion, type Regions } from './harness.js';
import { TIED_TO_THIS_PROCESS, tiedToThisProcess } from './system.js';

const CLI = fileURLToPath(new URL('../../bin/probefleet.js', import.meta.url));
/** How long a process may take to say it is ready (node starts slowly on a busy 2-vCPU machine). */
const READY_TIMEOUT_MS = 30_000;
/** Workers get this long to finish a job in flight when the fleet stops. */
const WORKER_GRACE_SECONDS = 5;
/** Log lines kept per process, for the message when it fails. */
const KEPT_LINES = 40;

export interface FleetRedis {
  /** redis://127.0.0.1:PORT, the same URL on this machine and (through the relay) in every region. */
  url: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/** A redis-server of the fleet's own on a free port, with an append-only file in a folder of its
 * own (removed when it stops): it persists as a fleet's Redis should, so the coordinator has
 * nothing to warn about. */
export async function startFleetRedis(): Promise<FleetRedis> {
  const port = await freeLoopbackPort();
  const url = `redis://127.0.0.1:${port}`;
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-demo-redis-'));
  const args = ['--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--save', '', '--appendonly', 'yes'];
  const server: RedisServer = await startRedisServer({
    launcher: TIED_TO_THIS_PROCESS,
    args: [...args, '--loglevel', 'warning'],
    url,
  }).catch(async (err: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw err;
  });
  const stop = async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
  return { url, port, pid: server.process.pid!, stop };
}

export interface FleetProcess {
  /** `coordinator`, `worker eu-west` */
  what: string;
  pid: number;
  /** The namespace it runs in; null for this machine's. */
  namespace: string | null;
}

export interface RegionFleetOptions {
  /** Must forward the Redis port (RegionsOptions.forwardPorts). */
  regions: Regions;
  redisUrl: string;
  /** Added to every worker's command line: the place for options workers grow (a target
   * allowlist), so the demo passes them through without knowing them. */
  workerArgs?: string[];
  /** Where the workers, the coordinator and `run` push their metrics; forwarded into the regions
   * like Redis (RegionsOptions.forwardPorts), so the same 127.0.0.1 URL everywhere. */
  pushgatewayUrl?: string;
  log: Logger;
}

export interface RegionFleet {
  /** The coordinator's /metrics, on this machine. */
  metricsUrl: string;
  processes: FleetProcess[];
  /** `probefleet run PLAN --redis URL --regions <the emulated ones> ...extraArgs`, its stdout and
   * stderr on ours; resolves with its exit code. */
  run(planFile: string, extraArgs?: string[]): Promise<number>;
  /** Stops the workers (letting a job in flight finish briefly) and the coordinator. */
  close(): Promise<void>;
}

/** The level children log at: info at least, because their "ready" lines are info. */
function childLogLevel(): string {
  const wanted = process.env.PROBEFLEET_LOG_LEVEL ?? 'warn';
  return (pino.levels.values[wanted] ?? Infinity) < pino.levels.values.info ? wanted : 'info';
}

/** Log lines at or above this level (and anything that is not a log line) are passed to our stderr. */
function forwardedLevel(): number {
  const wanted = process.env.PROBEFLEET_LOG_LEVEL ?? 'warn';
  return wanted === 'silent' ? Infinity : (pino.levels.values[wanted] ?? pino.levels.values.warn);
}

interface Started {
  process: FleetProcess;
  /** The fields of the log line that said it was ready. */
  ready: Record<string, unknown>;
  stop(graceMs: number): Promise<void>;
}

/** Starts a CLI process and resolves once it logs `readyMessage`; rejects with its last log lines
 * if it exits or stays silent first. */
function startCli(
  what: string,
  namespace: string | null,
  spawnIt: (options: SpawnOptions) => ChildProcess,
  readyMessage: string,
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<Started> {
  const child = spawnIt({
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
    env: { ...env, PROBEFLEET_LOG_LEVEL: childLogLevel() },
  });
  const forwardAt = forwardedLevel();
  const kept: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopping = false;
  const stop = async (graceMs: number) => {
    stopping = true;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => fail(`did not say "${readyMessage}" within ${READY_TIMEOUT_MS / 1000} s`),
      READY_TIMEOUT_MS,
    );
    let settled = false;
    let up = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${what} ${why}${kept.length ? `; its last log lines:\n${kept.join('\n')}` : ''}`));
    };
    child.once('exit', (code, signal) => {
      // A worker gone mid-run leaves its region's jobs to the run's deadline: say so at once.
      if (up && !stopping)
        log.error(
          { process: what, exit: signal ?? code, lastLines: kept.slice(-5) },
          'a fleet process exited while the fleet was up',
        );
    });
    let partial = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        kept.push(line);
        if (kept.length > KEPT_LINES) kept.shift();
        let entry: { level?: number; msg?: string } | undefined;
        try {
          entry = JSON.parse(line);
        } catch {
          // not a log line (a crash): always shown
        }
        if (!entry || (entry.level ?? Infinity) >= forwardAt) process.stderr.write(`${line}\n`);
        if (!settled && entry?.msg === readyMessage) {
          settled = up = true;
          clearTimeout(timer);
          resolve({ process: { what, pid: child.pid!, namespace }, ready: entry, stop });
        }
      }
    });
    child.once('error', (err) => fail(`could not start: ${err.message}`));
    child.once('exit', (code, signal) => fail(`exited (${signal ?? `code ${code}`}) while starting`));
  });
}

export async function startRegionFleet(options: RegionFleetOptions): Promise<RegionFleet> {
  const { regions, redisUrl, log } = options;
  const names = regions.regions.map((r) => r.name);
  // The fleet signs its jobs with a key of its own, as a fleet should (docs/security.md): its
  // coordinator, workers and runs share it, and no worker warns that it runs unsigned jobs.
  const env = { ...process.env, [JOB_KEY_ENV]: randomBytes(32).toString('hex') };
  let coordinator: Started | undefined;
  const workers = new Map<string, Started>();
  const runs = new Set<ChildProcess>();

  const close = async () => {
    for (const child of runs) child.kill('SIGKILL');
    await Promise.all([...workers.values()].map((worker) => worker.stop((WORKER_GRACE_SECONDS + 5) * 1000)));
    await coordinator?.stop(5_000);
    log.debug('fleet stopped');
  };

  // A demo lives for one run: its workers push every second, not every 5 s, so the numbers are in
  // Prometheus when the run's table is printed.
  const pushArgs = options.pushgatewayUrl
    ? ['--pushgateway', options.pushgatewayUrl, '--pushgateway-interval-seconds', '1']
    : [];
  const startingCoordinator = startFleetCoordinator(names, redisUrl, pushArgs, env, log).then(
    (started) => (coordinator = started),
  );
  const startingWorkers = regions.regions.map((region) =>
    startFleetWorker(regions, region, redisUrl, [...pushArgs, ...(options.workerArgs ?? [])], env, log).then(
      (started) => {
        workers.set(region.name, started);
        return started;
      },
    ),
  );
  // All of them are waited for before a failure counts, so that close() stops whatever did start.
  await Promise.allSettled([startingCoordinator, ...startingWorkers]);
  let up: [Started, ...Started[]];
  try {
    up = await Promise.all([startingCoordinator, ...startingWorkers]);
  } catch (err) {
    await close();
    throw err;
  }

  const processes = up.map((started) => started.process);
  log.info({ processes }, 'fleet up');
  return {
    metricsUrl: String(up[0].ready.metrics),
    processes,
    run(planFile, extraArgs = []) {
      const child = spawn(
        ...tiedToThisProcess(process.execPath, [
          CLI,
          'run',
          planFile,
          '--redis',
          redisUrl,
          '--regions',
          ...names,
          ...pushArgs,
          ...extraArgs,
        ]),
        {
          stdio: ['ignore', 'inherit', 'inherit'],
          detached: true,
          env,
        },
      );
      runs.add(child);
      child.once('exit', () => runs.delete(child));
      return exitCodeOf(child, log);
    },
    close,
  };
}

/** The fleet's coordinator, on this machine (it reaches Redis directly). */
function startFleetCoordinator(
  names: string[],
  redisUrl: string,
  pushArgs: string[],
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<Started> {
  const args = [
    'coordinator',
    '--redis',
    redisUrl,
    '--port',
    '0',
    ...names.flatMap((name) => ['--region', name]),
    ...pushArgs,
  ];
  return startCli(
    'coordinator',
    null,
    (spawnOptions) => spawn(...tiedToThisProcess(process.execPath, [CLI, ...args]), spawnOptions),
    'serving; Ctrl-C to stop',
    env,
    log,
  );
}

/** One region's worker, in the region's namespace, its probes at a real-time priority. */
function startFleetWorker(
  regions: Regions,
  region: EmulatedRegion,
  redisUrl: string,
  extraArgs: string[],
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<Started> {
  const args = [
    'worker',
    '--region',
    region.name,
    '--redis',
    redisUrl,
    '--allow-targets',
    TARGET_ALLOWANCES.join(','),
    '--shutdown-grace-seconds',
    String(WORKER_GRACE_SECONDS),
    ...extraArgs,
  ];
  return startCli(
    `worker ${region.name}`,
    region.namespace,
    (spawnOptions) =>
      regions.spawn(region.namespace, ...tiedToThisProcess(process.execPath, [CLI, ...args]), {
        ...spawnOptions,
        realtime: true,
      }),
    'worker ready',
    env,
    log,
  );
}

/** The exit code of a `probefleet run` child (128 + the signal's number when killed; 1 when it could not start). */
function exitCodeOf(child: ChildProcess, log: Logger): Promise<number> {
  return new Promise((resolve) => {
    child.once('error', (err) => {
      log.error({ err: err.message }, 'could not start probefleet run');
      resolve(1);
    });
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
  });
}
