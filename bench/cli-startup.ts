// How long a `probefleet` command takes from process start to exit, as a user runs it, against a
// bare `node -e 0` measured in the same rounds: --version, --help, `plan validate` and `plan schema`
// of a small plan, `schedule list` of a Redis holding that plan's schedule (a redis-server of this
// script's own). Each round runs every command once, in an order rotated from round to round;
// medians over the rounds, each judged against the 0.3 s target of issue 34. Wall time from spawn
// to exit, and the process's CPU time (user + system, from /usr/bin/time: wall time on a busy
// machine includes waiting for a CPU). Markdown on stdout. Not part of `npm run bench`:
//   npm run build && node dist/bench/cli-startup.js [--rounds 11]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import bundleScript from '../cli/bundle-script.cjs';
import { median } from '../common/stats.js';
import { startBenchRedis } from './queue.js';

const { CLI_CODE_CACHE, cliBundleIsCurrent } = bundleScript;

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TARGET_MS = 300;
const PLAN = 'examples/compose-nightly.yaml';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '11' } } });
const rounds = Number(values.rounds);
if (!(Number.isInteger(rounds) && rounds >= 1 && rounds <= 101))
  throw new Error(`--rounds: 1 to 101, got ${values.rounds}`);

/** One process, start to exit: its wall time, and its CPU time as /usr/bin/time reports it. */
async function timed(args: string[], timeFile: string): Promise<{ wallMs: number; cpuMs: number }> {
  const started = process.hrtime.bigint();
  const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', '%U %S', '-o', timeFile, ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (exitCode) => resolve({ code: exitCode, stderr: err }));
  });
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (code !== 0) throw new Error(`${args.join(' ')} exited with ${code}: ${stderr.trim()}`);
  const [user, system] = (await readFile(timeFile, 'utf8')).trim().split('\n').pop()!.split(' ').map(Number);
  return { wallMs, cpuMs: (user! + system!) * 1000 };
}

const redis = await startBenchRedis();
const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-cli-startup-'));
const node = process.execPath;
const cli = ['bin/probefleet.js'];
const redisArgs = ['--redis', redis.url];
// What `schedule list` lists: the plan's schedule, added as deploy/compose.yaml adds it.
const added = spawnSync(node, [...cli, 'schedule', 'add', PLAN, '--lab-at', 'lab:18170', ...redisArgs], {
  cwd: REPO_ROOT,
  encoding: 'utf8',
});
if (added.status !== 0) throw new Error(`schedule add exited with ${added.status}: ${added.stderr}`);

const commands: { name: string; args: string[]; judged: boolean }[] = [
  { name: 'node -e 0', args: [node, '-e', '0'], judged: false },
  { name: 'probefleet --version', args: [node, ...cli, '--version'], judged: true },
  { name: 'probefleet --help', args: [node, ...cli, '--help'], judged: true },
  { name: `probefleet plan validate ${PLAN}`, args: [node, ...cli, 'plan', 'validate', PLAN], judged: true },
  { name: 'probefleet plan schema', args: [node, ...cli, 'plan', 'schema'], judged: true },
  {
    name: 'probefleet schedule list --redis redis://127.0.0.1:PORT',
    args: [node, ...cli, 'schedule', 'list', ...redisArgs],
    judged: true,
  },
];
const measured = new Map(commands.map((c) => [c.name, [] as { wallMs: number; cpuMs: number }[]]));
const loadBefore = loadavg()[0]!;
try {
  for (let round = 0; round < rounds; round++) {
    const k = round % commands.length;
    for (const command of [...commands.slice(k), ...commands.slice(0, k)]) {
      measured.get(command.name)!.push(await timed(command.args, path.join(dir, 'time.txt')));
    }
    process.stderr.write(`cli-startup: round ${round + 1}/${rounds}, load average ${loadavg()[0]!.toFixed(2)}\n`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
  await redis.stop();
}
const loadAfter = loadavg()[0]!;

const medianOf = (name: string, field: 'wallMs' | 'cpuMs') => median(measured.get(name)!.map((m) => m[field]));
const bare = { wallMs: medianOf('node -e 0', 'wallMs'), cpuMs: medianOf('node -e 0', 'cpuMs') };
const rows = commands.map(({ name, judged }) => {
  const wallMs = medianOf(name, 'wallMs');
  const cpuMs = medianOf(name, 'cpuMs');
  const verdict = judged ? `≤ ${TARGET_MS} ms: ${wallMs <= TARGET_MS ? 'met' : 'missed'}` : '(the floor)';
  return `| \`${name}\` | ${Math.round(wallMs)} ms | ${(wallMs / bare.wallMs).toFixed(2)}x | ${Math.round(cpuMs)} ms | ${verdict} |`;
});
/** What bin/probefleet.js ran (decision 034), so that a figure of the modules is not taken for one of the bundle. */
const ran = !cliBundleIsCurrent()
  ? 'the modules (the bundle is older than tsc output: npm run build)'
  : existsSync(CLI_CODE_CACHE)
    ? 'the bundle, with its code cache'
    : `the bundle, without a code cache (none for Node ${process.version})`;
process.stdout.write(
  [
    `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} CPUs, Node ${process.version}; ${rounds} rounds;` +
      ` one-minute load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after; the CLI ran as ${ran}.`,
    '',
    '| command | wall, start to exit (median) | over `node -e 0` | CPU, user + system (median) | target |',
    '|---|---:|---:|---:|---|',
    ...rows,
    '',
  ].join('\n'),
);
