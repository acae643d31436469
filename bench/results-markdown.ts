// bench/results.md from one benchmark run: the machine, every round, medians, ratios against
// the targets, and where a target was missed, by how much and what a CPU profile shows.
import { median } from '../common/stats.js';
import type { ProfileLine } from './cpu-profile.js';
import type { LayerCost } from './overhead-process.js';
import { SEQUENTIAL_RUNS, type LoadRun, type SequentialRun } from './tools.js';

export interface Machine {
  date: string;
  cpu: string;
  memoryGiB: number;
  os: string;
  node: string;
  undici: string;
  hdrHistogram: string;
  autocannon: string;
  curl: string;
  wrk: string;
  commit: string;
}

export interface BenchResults {
  machine: Machine;
  settings: { rounds: number; requests: number; connections: number; seconds: number };
  /** Per round, the runs in the order they ran. */
  sequential: SequentialRun[][];
  /** Per-request cost of each layer over undici, in one warm process. */
  layers: LayerCost[];
  load: LoadRun[][];
  /** Peak RSS of a bare Node process and of one that only loaded the worker's code. */
  baseline: { nodeKb: number; workerCodeKb: number };
  profiles: { sequential?: ProfileLine[]; load?: ProfileLine[] };
}

const RSS_LIMIT_MB = 150;
const SEQUENTIAL_LIMIT = 1.2;

const fixed = (n: number, digits = 2) => n.toFixed(digits);
const ms = (n: number) => `${n < 1 ? n.toFixed(3) : n.toFixed(2)} ms`;
const mb = (kb: number) => `${Math.round(kb / 1024)} MB`;
const us = (seconds: number, requests: number) => `${Math.round((seconds * 1e6) / requests)} µs`;
const count = (n: number) => Math.round(n).toLocaleString('en-US');

function find<T extends { tool: string }>(round: T[], tool: T['tool']): T {
  return round.find((r) => r.tool === tool)!;
}

/** "met", or "missed by N%" relative to the target. */
function verdict(value: number, target: number, atMost: boolean): string {
  const met = atMost ? value <= target : value >= target;
  if (met) return 'met';
  const by = atMost ? value / target - 1 : 1 - value / target;
  return `**missed** by ${(by * 100).toFixed(0)}%`;
}

function profileTable(lines: ProfileLine[]): string {
  return ['| self time | where |', '|---:|---|', ...lines.map((l) => `| ${fixed(l.selfPercent, 1)}% | \`${l.where}\` |`)].join('\n');
}

export function renderResults(r: BenchResults): { markdown: string; missed: { sequential: boolean; load: boolean } } {
  const { machine: m, settings: s } = r;

  const seqRatios = r.sequential.map((round) => find(round, 'probefleet').medianMs / find(round, 'curl').medianMs);
  const seqRatio = median(seqRatios);
  const runRatio = (run: number) => median(r.sequential.map((round) => find(round, 'probefleet').runMediansMs![run] / find(round, 'curl').medianMs));
  const firstRunRatio = runRatio(0);
  const secondRunRatio = runRatio(1);
  const overUndici = median(r.sequential.map((round) => find(round, 'probefleet').medianMs / find(round, 'undici').medianMs));
  const undiciOverCurl = median(r.sequential.map((round) => find(round, 'undici').medianMs / find(round, 'curl').medianMs));
  const acRatios = r.load.map((round) => find(round, 'probefleet').requestsPerSecond / find(round, 'autocannon').requestsPerSecond);
  const wrkRatios = r.load.map((round) => find(round, 'probefleet').requestsPerSecond / find(round, 'wrk').requestsPerSecond);
  const acRatio = median(acRatios);
  const wrkRatio = median(wrkRatios);
  const seqRssKb = Math.max(...r.sequential.map((round) => find(round, 'probefleet').measured.maxRssKb));
  const loadRssKb = Math.max(...r.load.map((round) => find(round, 'probefleet').measured.maxRssKb));
  const missed = { sequential: [seqRatio, secondRunRatio, firstRunRatio].some((x) => x > SEQUENTIAL_LIMIT), load: acRatio < 1 || wrkRatio < 0.5 };

  const out: string[] = [];
  out.push(
    '# probefleet benchmarks',
    '',
    `Written by \`npm run bench\` (bench/run.ts) on ${m.date}; every run overwrites this file.`,
    'Each benchmark starts the lab target in a process of its own on loopback and runs every tool',
    'against the same endpoint (`GET /` on the keep-alive server, a 30-byte body) in the same run,',
    'rotating the order of the tools from round to round. Each tool runs as a process of its own,',
    'measured the same way: CPU time and peak RSS from `/usr/bin/time`, the lab server\'s CPU time',
    'from `/proc`. probefleet runs as a child that executes the job with the worker\'s own code',
    '(`bench/probe-process.ts` → `executeJob`).',
    '',
    'Reproduce (Debian, as root for the packages):',
    '',
    '```sh',
    'apt-get install -y curl wrk time',
    `npm ci && npm run bench -- --rounds ${s.rounds} --requests ${s.requests} --connections ${s.connections} --duration ${s.seconds}`,
    '```',
    '',
    '| machine | |',
    '|---|---|',
    `| CPU | ${m.cpu} |`,
    `| memory | ${m.memoryGiB} GiB |`,
    `| OS | ${m.os} |`,
    `| Node.js | ${m.node} |`,
    `| undici | ${m.undici} |`,
    `| hdr-histogram-js | ${m.hdrHistogram} |`,
    `| autocannon | ${m.autocannon} |`,
    `| curl | ${m.curl} |`,
    `| wrk | ${m.wrk} |`,
    `| probefleet commit | ${m.commit} |`,
    '',
    'This machine is shared with other work, which the numbers cannot exclude: every row records',
    'the one-minute load average just before it ran. Read the ratios (measured within each round,',
    'then the median over rounds), not the absolute numbers.',
    '',
    '## Targets',
    '',
    '| target | measured | |',
    '|---|---:|---|',
    `| sequential per-request time within ${SEQUENTIAL_LIMIT}x curl's: a long-lived worker (job ${SEQUENTIAL_RUNS} in its process) | ${fixed(seqRatio)}x | ${verdict(seqRatio, SEQUENTIAL_LIMIT, true)} |`,
    `| the same: the second job in a process | ${fixed(secondRunRatio)}x | ${verdict(secondRunRatio, SEQUENTIAL_LIMIT, true)} |`,
    `| the same: the first job of a fresh process | ${fixed(firstRunRatio)}x | ${verdict(firstRunRatio, SEQUENTIAL_LIMIT, true)} |`,
    `| (for context) probefleet over a bare undici loop, warm | ${fixed(overUndici)}x | |`,
    `| (for context) a bare undici loop over curl, warm | ${fixed(undiciOverCurl)}x | |`,
    `| load throughput at least autocannon's (${s.connections} connections) | ${fixed(acRatio)}x | ${verdict(acRatio, 1, false)} |`,
    `| load throughput at least half of wrk's (${s.connections} connections) | ${fixed(wrkRatio)}x | ${verdict(wrkRatio, 0.5, false)} |`,
    `| worker peak RSS under ${RSS_LIMIT_MB} MB, ${s.requests}-request probe | ${mb(seqRssKb)} | ${verdict(seqRssKb / 1024, RSS_LIMIT_MB, true)} |`,
    `| worker peak RSS under ${RSS_LIMIT_MB} MB, load run | ${mb(loadRssKb)} | ${verdict(loadRssKb / 1024, RSS_LIMIT_MB, true)} |`,
    '',
  );

  out.push(
    `## Sequential: ${s.requests} reused HTTP/1.1 requests`,
    '',
    `probefleet: the \`reuse\` probe in \`reused\` mode (one keep-alive connection), median of its`,
    `per-request \`total\`, run ${SEQUENTIAL_RUNS} times in one process, as a worker runs job after job: the`,
    'first run is the first thing a fresh process does (its request path not yet compiled by the',
    'JIT), the last is what a long-lived worker measures. undici: the floor under probefleet, a',
    'bare undici `Client.dispatch` loop (no timing phases, no samples, body discarded), run the same',
    'way (`bench/undici-process.ts`). curl: one process, a URL glob (`?n=[1-N]`) so it reuses its',
    'connection, median of `%{time_total}`. None includes process start-up.',
    '',
    `| round | tool | median per request (job ${SEQUENTIAL_RUNS}) | job 1 | job 2 | process CPU | peak RSS | load avg |`,
    '|---:|---|---:|---:|---:|---:|---:|---:|',
    ...r.sequential.flatMap((round, i) =>
      round.map(
        (run) =>
          `| ${i + 1} | ${run.tool} | ${ms(run.medianMs)} | ${run.runMediansMs ? ms(run.runMediansMs[0]) : ''} | ${run.runMediansMs ? ms(run.runMediansMs[1]) : ''} | ` +
          `${fixed(run.measured.cpuSeconds)} s | ${mb(run.measured.maxRssKb)} | ${fixed(run.measured.loadAverage)} |`,
      ),
    ),
    '',
    `Median over rounds: probefleet ${ms(median(r.sequential.map((x) => find(x, 'probefleet').medianMs)))} ` +
      `(job 1: ${ms(median(r.sequential.map((x) => find(x, 'probefleet').runMediansMs![0])))}), ` +
      `undici ${ms(median(r.sequential.map((x) => find(x, 'undici').medianMs)))}, ` +
      `curl ${ms(median(r.sequential.map((x) => find(x, 'curl').medianMs)))}; ` +
      `probefleet / curl per round: ${seqRatios.map((x) => fixed(x)).join(', ')} (median **${fixed(seqRatio)}x**); ` +
      `probefleet / undici: median **${fixed(overUndici)}x**; undici / curl: median **${fixed(undiciOverCurl)}x**.`,
    '',
  );

  const floor = r.layers[0];
  out.push(
    '### Where the sequential time goes',
    '',
    '`bench/overhead-process.ts`: one process, 1,000 sequential reused requests through each layer',
    'probefleet puts on top of undici, the layers alternating, 10 warm-up rounds and then the median',
    'of 15. CPU is the client process\'s own (user + system) per request; wall includes the server.',
    '',
    '| layer | client CPU / request | over the floor | wall / request | over the floor |',
    '|---|---:|---:|---:|---:|',
    ...r.layers.map(
      (l) =>
        `| ${l.layer} | ${Math.round(l.cpuMicros)} µs | ${fixed(l.cpuMicros / floor.cpuMicros)}x | ${Math.round(l.wallMicros)} µs | ${fixed(l.wallMicros / floor.wallMicros)}x |`,
    ),
    '',
  );

  const loadMedian = (tool: LoadRun['tool'], pick: (run: LoadRun) => number) => median(r.load.map((round) => pick(find(round, tool))));
  out.push(
    `## Load: ${s.connections} connections for ${s.seconds} s`,
    '',
    `probefleet: the \`load\` probe, closed loop, mode \`reused\`, ${s.connections} connections. autocannon:`,
    `\`-c ${s.connections} -d ${s.seconds}\` (its CLI, one event loop). wrk: \`-t1 -c${s.connections} -d${s.seconds}s --latency\` (one thread).`,
    'req/s = answered requests / run time; p99 as each tool reports it. Client and server CPU per',
    'request show which side was the bottleneck: the server is one Node process on one core.',
    '',
    '| round | tool | req/s | p99 | errors | client CPU / request | server CPU / request | client peak RSS | load avg |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.load.flatMap((round, i) =>
      round.map(
        (run) =>
          `| ${i + 1} | ${run.tool} | ${count(run.requestsPerSecond)} | ${ms(run.p99Ms)} | ${run.errors} | ${us(run.measured.cpuSeconds, run.requests)} | ` +
          `${us(run.measured.serverCpuSeconds, run.requests)} | ${mb(run.measured.maxRssKb)} | ${fixed(run.measured.loadAverage)} |`,
      ),
    ),
    '',
    '| tool | median req/s | median p99 | median client CPU / request |',
    '|---|---:|---:|---:|',
    ...(['probefleet', 'autocannon', 'wrk'] as const).map(
      (tool) =>
        `| ${tool} | ${count(loadMedian(tool, (x) => x.requestsPerSecond))} | ${ms(loadMedian(tool, (x) => x.p99Ms))} | ` +
        `${Math.round(loadMedian(tool, (x) => (x.measured.cpuSeconds * 1e6) / x.requests))} µs |`,
    ),
    '',
    `probefleet / autocannon req/s per round: ${acRatios.map((x) => fixed(x)).join(', ')} (median **${fixed(acRatio)}x**); ` +
      `probefleet / wrk: ${wrkRatios.map((x) => fixed(x)).join(', ')} (median **${fixed(wrkRatio)}x**).`,
    '',
  );

  out.push(
    '## Peak RSS of the probefleet process',
    '',
    `The probefleet child loads the worker's code (contracts, undici, pino, the probes) and runs one job;`,
    `its peak RSS is the kernel's high-water mark for the whole process. Largest over rounds: ${mb(seqRssKb)}`,
    `for the process that ran the ${s.requests}-request \`reuse\` probe (${SEQUENTIAL_RUNS} times over, so the peak covers`,
    `all of them), ${mb(loadRssKb)} during a ${s.seconds} s load run with ${s.connections} connections. For scale: a`,
    `bare Node.js process peaks at ${mb(r.baseline.nodeKb)}, one that only loads the worker's code at ${mb(r.baseline.workerCodeKb)}.`,
    '(A BullMQ worker process adds its Redis client on top.)',
    '',
  );

  if (r.profiles.sequential || r.profiles.load) {
    out.push('## CPU profiles', '', 'V8 CPU profile of the probefleet job alone (run once more, untimed; for the sequential job, its last run in the process), top entries by self time.', '');
    if (r.profiles.sequential) out.push(`### Sequential (${s.requests} requests)`, '', profileTable(r.profiles.sequential), '');
    if (r.profiles.load) out.push(`### Load (${s.connections} connections, ${s.seconds} s)`, '', profileTable(r.profiles.load), '');
  }
  return { markdown: `${out.join('\n').trimEnd()}\n`, missed };
}
