// `npm run bench`: probefleet against the tools people would otherwise use, side by side in one
// run, against two targets on loopback that this run starts: Debian's nginx (a 19-byte body; fast
// enough not to hide a client's own cost) and the lab (a Node server, in its own process).
//   sequential: 200 reused HTTP/1.1 requests, probefleet `reuse` vs one curl process (URL glob),
//               with a bare undici Client.dispatch loop as the floor under probefleet
//   load:       probefleet `load` vs autocannon vs wrk, same connections and duration
//   h2:         probefleet `load` in h2 mode (one thread, then two) vs a bare node:http2 loop vs
//               h2load, 2 connections x 10 streams, against nginx over TLS with HTTP/2
//   peak RSS:   of the probefleet (worker code) processes in both
//   queue:      split + enqueue of 100,000 jobs, and 10,000 light jobs through two region
//               workers, on a redis-server of its own, against redis-benchmark on that server
// Tools alternate within each round so that whatever else runs on the machine hits them alike.
// `--only queue` (or sequential, load, h2; comma-separated) runs some of them. Writes
// bench/results.md (or --out); not part of `npm test`.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { cpus, release, tmpdir, totalmem, type as osType } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startNginx } from '../common/nginx-server.js';
import { createLabCa } from '../lab/certs.js';
import { writeFileAtomic } from '../common/write-file-atomic.js';
import { summarizeCpuProfile } from './cpu-profile.js';
import { ALL_CPUS, pinProcesses } from './measure.js';
import {
  endToEndRun,
  ENQUEUE_MODES,
  enqueueRun,
  probeLoopRun,
  redisCeiling,
  startBenchRedis,
  type QueueRound,
} from './queue.js';
import { renderResults, type BenchResults, type BenchTarget, type Machine } from './results-markdown.js';
import {
  AUTOCANNON_CLI,
  autocannonLoad,
  bareH2Load,
  baselineRss,
  h2loadRun,
  type H2Shape,
  probefleetH2Load,
  curlSequential,
  probefleetLoad,
  probefleetOverhead,
  probefleetSequential,
  undiciSequential,
  wrkLoad,
  type LoadRun,
  type SequentialRun,
  type ToolContext,
} from './tools.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LAB_PROCESS = fileURLToPath(new URL('./lab-process.js', import.meta.url));

function positiveNumber(name: string, value: string, max: number): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > max) {
    process.stderr.write(`bench: --${name} must be a number in (0, ${max}], got "${value}"\n`);
    process.exit(2);
  }
  return n;
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => existsSync(path.join(dir, command)));
}

const BENCHMARKS = ['sequential', 'load', 'h2', 'queue'] as const;
/** The HTTP/2 load benchmark's shape. */
const H2_SHAPE: H2Shape = { connections: 2, streams: 10, seconds: 5 };
const NGINX_BINARY = '/usr/sbin/nginx';
/** What nginx serves at `/`: 19 bytes. */
const NGINX_BODY = 'probefleet bench.\n\n';
type Benchmark = (typeof BENCHMARKS)[number];
/** The CPU the sequential benchmark runs its targets and clients on. */
const SEQUENTIAL_CPU = 0;

function benchmarksOf(only: string): Set<Benchmark> {
  const names = only.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !(BENCHMARKS as readonly string[]).includes(name));
  if (unknown.length > 0 || names.length === 0) {
    process.stderr.write(`bench: --only takes ${BENCHMARKS.join(', ')} (comma-separated), got "${only}"\n`);
    process.exit(2);
  }
  return new Set(names as Benchmark[]);
}

/** What the chosen benchmarks need besides Node; each with how to get it. */
function missingPrerequisites(selected: Set<Benchmark>): string[] {
  const missing: string[] = [];
  if (selected.has('sequential') && !onPath('curl')) missing.push('curl (apt-get install curl)');
  if (!existsSync(NGINX_BINARY)) missing.push(`${NGINX_BINARY} (apt-get install nginx)`);
  if (selected.has('load') && !onPath('wrk')) missing.push('wrk (apt-get install wrk)');
  if (selected.has('h2') && !onPath('h2load')) missing.push('h2load (apt-get install nghttp2-client)');
  if (!existsSync('/usr/bin/time')) missing.push('/usr/bin/time (apt-get install time)');
  if (selected.has('load') && !existsSync(AUTOCANNON_CLI)) missing.push('autocannon (a devDependency: npm ci)');
  if (selected.has('queue') && !onPath('redis-server')) missing.push('redis-server (apt-get install redis-server)');
  if (selected.has('queue') && !onPath('redis-benchmark'))
    missing.push('redis-benchmark (apt-get install redis-tools)');
  return missing;
}

function firstLine(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      .split('\n')[0]
      .trim();
  } catch (err) {
    // wrk -v prints its version and exits 1.
    return String((err as { stdout?: string }).stdout ?? '')
      .split('\n')[0]
      .trim();
  }
}

function packageVersion(name: string): string {
  const require = createRequire(import.meta.url);
  let dir = path.dirname(require.resolve(name));
  while (
    !existsSync(path.join(dir, 'package.json')) ||
    JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).name !== name
  )
    dir = path.dirname(dir);
  return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

function describeMachine(): Machine {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    if (execFileSync('git', ['status', '--porcelain'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim())
      commit += ' (with uncommitted changes)';
  } catch {
    // Not a git checkout: the versions below still say what ran.
  }
  return {
    date: new Date().toISOString(),
    cpu: `${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores`,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${osType()} ${release()}`,
    node: process.version,
    undici: packageVersion('undici'),
    hdrHistogram: packageVersion('hdr-histogram-js'),
    autocannon: packageVersion('autocannon'),
    curl: onPath('curl') ? firstLine('curl', ['--version']) : 'not installed',
    wrk: onPath('wrk') ? firstLine('wrk', ['-v']) : 'not installed',
    // nginx -v prints to stderr.
    nginx: existsSync(NGINX_BINARY) ? firstLine('sh', ['-c', `${NGINX_BINARY} -v 2>&1`]) : 'not installed',
    redis: onPath('redis-server') ? firstLine('redis-server', ['--version']) : 'not installed',
    bullmq: packageVersion('bullmq'),
    commit,
  };
}

interface LabProcess {
  pid: number;
  urls: Record<string, string>;
  stop(): Promise<void>;
}

async function startLabProcess(): Promise<LabProcess> {
  const child = spawn(process.execPath, [LAB_PROCESS], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the lab process exited (${code}) before it was ready`)));
  });
  return {
    pid: child.pid!,
    urls: JSON.parse(line) as Record<string, string>,
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/** Rotations of `items`, one per round, so each tool runs first, middle and last alike. */
function orderFor<T>(items: readonly T[], round: number): T[] {
  const k = round % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

/** Runs `run` with a fresh folder for CPU profiles and summarizes the first profile written there. */
async function profileInto(run: (dir: string) => Promise<unknown>) {
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-bench-profile-'));
  try {
    await run(dir);
    const [file] = (await readdir(dir)).filter((name) => name.endsWith('.cpuprofile')).sort();
    if (!file) throw new Error(`no CPU profile was written into ${dir}`);
    return await summarizeCpuProfile(path.join(dir, file), 15);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const profileOf = (run: (ctx: ToolContext) => Promise<unknown>, ctx: ToolContext) =>
  profileInto((dir) => run({ ...ctx, profileFile: path.join(dir, 'job.cpuprofile') }));

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string', default: BENCHMARKS.join(',') },
      rounds: { type: 'string', default: '5' },
      'queue-rounds': { type: 'string', default: '3' },
      requests: { type: 'string', default: '200' },
      connections: { type: 'string', default: '10' },
      duration: { type: 'string', default: '10' },
      out: { type: 'string', default: path.join(REPO_ROOT, 'bench', 'results.md') },
      profile: { type: 'boolean', default: false },
    },
  });
  const selected = benchmarksOf(values.only);
  const rounds = positiveNumber('rounds', values.rounds, 50);
  const queueRounds = positiveNumber('queue-rounds', values['queue-rounds'], 10);
  const requests = positiveNumber('requests', values.requests, 10_000);
  const connections = positiveNumber('connections', values.connections, 1000);
  const seconds = positiveNumber('duration', values.duration, 600);

  const missing = missingPrerequisites(selected);
  if (missing.length > 0) {
    process.stderr.write(`bench: missing ${missing.join(', ')}\n`);
    process.exit(1);
  }
  const machine = describeMachine();
  const lab = await startLabProcess();
  const url = `${lab.urls.keepalive}/`;
  const ctx: ToolContext = { serverPid: lab.pid };
  const say = (text: string) => process.stderr.write(`bench: ${text}\n`);
  const results: BenchResults = {
    machine,
    settings: { only: [...selected], rounds, queueRounds, requests, connections, seconds },
    profiles: {},
  };
  const httpBench = selected.has('sequential') || selected.has('load');
  // Access log off: under load it would be nginx's own disk writes that we measure.
  // Every benchmark uses it: the queue's one-request jobs go to nginx too, so that the target's
  // own CPU is small beside the workers'.
  const nginx = await startNginx([
    { files: { 'index.html': NGINX_BODY }, directives: ['access_log off;'] },
    {
      files: { 'index.html': NGINX_BODY },
      directives: ['access_log off;'],
      tls: { ...(await (await createLabCa()).issue({ hosts: ['127.0.0.1'] })), http2: true },
    },
  ]);
  const nginxUrl = `${nginx.urls[0]}/`;
  const targets: BenchTarget[] = [
    { name: 'nginx' as const, url: nginxUrl, pid: nginx.pid },
    { name: 'lab', url, pid: lab.pid },
  ];
  try {
    for (const target of httpBench ? targets : []) {
      const tctx: ToolContext = { serverPid: target.pid };
      say(`${target.name} target at ${target.url} (pid ${target.pid}); warming it up`);
      if (selected.has('sequential')) await curlSequential(target.url, requests, tctx);
      if (selected.has('load')) await wrkLoad(target.url, connections, 2, tctx);
    }

    if (selected.has('sequential')) {
      results.sequential = { nginx: [], lab: [] };
      const sequentialTools = { probefleet: probefleetSequential, undici: undiciSequential, curl: curlSequential };
      // Each target and every client on one CPU (bench/measure.ts, pinProcesses, says why).
      for (const target of targets) pinProcesses(target.pid, String(SEQUENTIAL_CPU));
      try {
        for (let round = 0; round < rounds; round++) {
          for (const target of orderFor(targets, round)) {
            const runs: SequentialRun[] = [];
            for (const tool of orderFor(['probefleet', 'undici', 'curl'] as const, round)) {
              runs.push(
                await sequentialTools[tool](target.url, requests, { serverPid: target.pid, cpu: SEQUENTIAL_CPU }),
              );
              say(
                `sequential round ${round + 1}/${rounds}, ${target.name}: ${tool} median ${runs.at(-1)!.medianMs.toFixed(3)} ms`,
              );
            }
            results.sequential[target.name].push(runs);
          }
        }
        const floorTarget = targets[0];
        say(`measuring where the sequential time goes, layer by layer (${floorTarget.name})`);
        results.layers = {
          target: floorTarget.name,
          costs: await probefleetOverhead(floorTarget.url, 1000, { serverPid: floorTarget.pid, cpu: SEQUENTIAL_CPU }),
        };
      } finally {
        for (const target of targets) pinProcesses(target.pid, ALL_CPUS);
      }
    }

    if (selected.has('load')) {
      results.load = { nginx: [], lab: [] };
      const loadTools = { probefleet: probefleetLoad, autocannon: autocannonLoad, wrk: wrkLoad };
      for (let round = 0; round < rounds; round++) {
        for (const target of orderFor(targets, round)) {
          const runs: LoadRun[] = [];
          for (const tool of orderFor(['probefleet', 'autocannon', 'wrk'] as const, round)) {
            runs.push(await loadTools[tool](target.url, connections, seconds, { serverPid: target.pid }));
            say(
              `load round ${round + 1}/${rounds}, ${target.name}: ${tool} ${Math.round(runs.at(-1)!.requestsPerSecond)} req/s, p99 ${runs.at(-1)!.p99Ms} ms`,
            );
          }
          results.load[target.name].push(runs);
        }
      }
    }
    if (selected.has('h2')) {
      results.h2 = { shape: H2_SHAPE, rounds: [] };
      const h2Url = `${nginx.urls[1]}/`;
      const h2Ctx: ToolContext = { serverPid: nginx.pid };
      const h2Tools = {
        probefleet: () => probefleetH2Load(h2Url, H2_SHAPE, 1, h2Ctx),
        'probefleet 2 threads': () => probefleetH2Load(h2Url, H2_SHAPE, 2, h2Ctx),
        'node:http2': () => bareH2Load(h2Url, H2_SHAPE, h2Ctx),
        'node:http2, undici loaded': () => bareH2Load(h2Url, H2_SHAPE, h2Ctx, true),
        h2load: () => h2loadRun(h2Url, H2_SHAPE, h2Ctx),
      };
      say(`h2 target at ${h2Url}; warming it up`);
      await h2loadRun(h2Url, { ...H2_SHAPE, seconds: 2 }, h2Ctx);
      for (let round = 0; round < rounds; round++) {
        const runs: LoadRun[] = [];
        for (const tool of orderFor(Object.keys(h2Tools) as (keyof typeof h2Tools)[], round)) {
          runs.push(await h2Tools[tool]());
          say(`h2 round ${round + 1}/${rounds}: ${tool} ${Math.round(runs.at(-1)!.requestsPerSecond)} req/s`);
        }
        results.h2.rounds.push(runs);
      }
    }
    if (httpBench) results.baseline = await baselineRss(ctx);

    if (selected.has('queue')) {
      const redis = await startBenchRedis();
      try {
        say(`redis-server of the benchmark at ${redis.url} (pid ${redis.pid})`);
        results.queue = [];
        for (let round = 0; round < queueRounds; round++) {
          const ceiling = await redisCeiling(redis);
          say(
            `queue round ${round + 1}/${queueRounds}: redis-benchmark LPUSH ${Math.round(ceiling.lpushPipelined)}/s pipelined, ${Math.round(ceiling.lpushTwoClients)}/s from 2 clients`,
          );
          const queueRound: QueueRound = {
            ceiling,
            probeLoop: await probeLoopRun(nginxUrl, { serverPid: nginx.pid }),
            enqueue: [],
            endToEnd: [],
          };
          say(
            `queue round ${round + 1}/${queueRounds}: the job in a loop in one process ${Math.round(queueRound.probeLoop.jobsPerSecond)} jobs/s`,
          );
          for (const mode of orderFor(ENQUEUE_MODES, round)) {
            queueRound.enqueue.push(await enqueueRun(redis, mode));
            say(
              `queue round ${round + 1}/${queueRounds}: enqueue (${mode}) ${Math.round(queueRound.enqueue.at(-1)!.jobsPerSecond)} jobs/s`,
            );
          }
          for (const tool of orderFor(
            ['probefleet', 'bullmq-undici', 'bullmq', 'probefleet-batched', 'bullmq-undici-batched'] as const,
            round,
          )) {
            queueRound.endToEnd.push(await endToEndRun(redis, nginxUrl, tool));
            say(
              `queue round ${round + 1}/${queueRounds}: end to end (${tool} workers) ${Math.round(queueRound.endToEnd.at(-1)!.jobsPerSecond)} jobs/s`,
            );
          }
          results.queue.push(queueRound);
        }
        const missedQueue = renderResults(results).missed;
        if (missedQueue.enqueue || values.profile) {
          say('profiling a probefleet submit');
          results.profiles.enqueue = await profileInto((dir) => enqueueRun(redis, 'batched', dir));
        }
        if (missedQueue.endToEnd || values.profile) {
          say('profiling a probefleet worker');
          results.profiles.worker = await profileInto((dir) => endToEndRun(redis, nginxUrl, 'probefleet', dir));
        }
      } finally {
        await redis.stop();
      }
    }

    const missed = renderResults(results).missed;
    const [first] = targets;
    const firstCtx: ToolContext = { serverPid: first.pid };
    if (missed.sequential || (selected.has('sequential') && values.profile)) {
      say(`profiling a probefleet sequential run (${first.name})`);
      results.profiles.sequential = await profileOf((c) => probefleetSequential(first.url, requests, c), firstCtx);
    }
    if (missed.load || (selected.has('load') && values.profile)) {
      say(`profiling a probefleet load run (${first.name})`);
      results.profiles.load = await profileOf((c) => probefleetLoad(first.url, connections, seconds, c), firstCtx);
    }
    await writeFileAtomic(values.out, renderResults(results).markdown);
    say(`wrote ${values.out}`);
  } finally {
    await nginx.stop();
    await lab.stop();
  }
}

await main();
