// A command loads only what it uses (docs/development.md, "Start-up"): each command below runs as
// `probefleet` does, in a process of its own that records every module it loads
// (helpers/record-modules.ts), and may load BullMQ, ioredis, undici and prom-client only where it
// needs them, and pino only once it logs. The commands that talk to Redis run against a stand-in
// that answers as a Redis holding one schedule, so their whole path runs, connecting included. No
// timing: start-up times are bench/cli-startup.ts's.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import bundleScript from '../../cli/bundle-script.cjs';
import { CLI, REPO_ROOT } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

/** The packages whose loading a command pays for when it has no use for them. */
const HEAVY = ['bullmq', 'ioredis', 'prom-client', 'undici'] as const;
type Heavy = (typeof HEAVY)[number];
/** Loaded when something first logs (common/log.ts, commandLogger): none of the commands below logs. */
const LOGGER = 'pino';

const { CLI_MODULES_ENTRY } = bundleScript;
const RECORDER = new URL('../helpers/record-modules.js', import.meta.url).href;
const dir = tempDir('probefleet-module-graph-');
let recorded = 0;

/** The heavy packages among the modules `probefleet ARGS` loads (run from `entry`), with every URL
 * loaded, its exit code and output. */
async function heavyLoadedBy(
  args: string[],
  entry = CLI,
): Promise<{ heavy: Heavy[]; logger: boolean; urls: string[]; code: number; stdout: string; stderr: string }> {
  const list = path.join(dir, `modules-${++recorded}.txt`);
  await writeFile(list, '');
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', RECORDER, entry, ...args],
      { cwd: REPO_ROOT, env: { ...process.env, PROBEFLEET_MODULES_FILE: list }, timeout: 60_000 },
      (err, out, errOut) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: out, stderr: errOut }),
    );
  });
  const urls = (await readFile(list, 'utf8')).split('\n');
  const loaded = (name: string) => urls.some((url) => url.includes(`/node_modules/${name}/`));
  return { heavy: HEAVY.filter(loaded), logger: loaded(LOGGER), urls, code, stdout, stderr };
}

/** The one schedule the stand-in below holds, as `schedule add` keeps it: its summary, beside a plan
 * that is not read (a plan's schemas are what listing does without). */
const SCHEDULE = {
  name: 'nightly',
  data: JSON.stringify({
    schema: 'probefleet.scheduled-run/v1',
    plan: {},
    tls: {},
    summary: { regions: ['eu-west', 'us-east'], jobs: 18 },
  }),
};

/** A RESP array of bulk strings. */
const respArray = (items: string[]) =>
  `*${items.length}\r\n${items.map((item) => `$${Buffer.byteLength(item)}\r\n${item}\r\n`).join('')}`;

/**
 * A stand-in for Redis on loopback that answers as a Redis holding one schedule and nothing else
 * would, as far as the commands below ask (PING with PONG, INFO with no cluster, CLIENT and QUIT
 * with OK, the schedulers' index and hash with SCHEDULE, anything else, HELLO and every other read,
 * with an empty list), so that `schedule list` and `runs list` run to their end without a server.
 */
async function startStandInRedis(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      // Each command is an array of bulk strings: *N\r\n then N times $LEN\r\nARG\r\n.
      for (let command = readCommand(pending); command; command = readCommand(pending)) {
        pending = pending.slice(command.length);
        const name = command.args[0]?.toLowerCase();
        const key = command.args[1] ?? '';
        if (name === 'ping') socket.write('+PONG\r\n');
        else if (name === 'info') socket.write('$11\r\nloading:0\r\n\r\n');
        else if (name === 'zrange' && key.endsWith(':runs:repeat'))
          socket.write(respArray([SCHEDULE.name, '1767225600000']));
        else if (name === 'hgetall' && key.endsWith(`:runs:repeat:${SCHEDULE.name}`))
          socket.write(respArray(['pattern', '0 2 * * *', 'tz', 'UTC', 'data', SCHEDULE.data]));
        else if (name === 'client' || name === 'quit') socket.write('+OK\r\n');
        else socket.write('*0\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The first whole command in `text` and how many characters it takes, or undefined. */
function readCommand(text: string): { args: string[]; length: number } | undefined {
  const head = /^\*(\d+)\r\n/.exec(text);
  if (!head) return undefined;
  let at = head[0].length;
  const args: string[] = [];
  for (let i = 0; i < Number(head[1]); i++) {
    const bulk = /^\$(\d+)\r\n/.exec(text.slice(at));
    if (!bulk) return undefined;
    const start = at + bulk[0].length;
    const end = start + Number(bulk[1]);
    if (text.length < end + 2) return undefined;
    args.push(text.slice(start, end));
    at = end + 2;
  }
  return { args, length: at };
}

describe("a command's module graph", () => {
  let redis: Awaited<ReturnType<typeof startStandInRedis>>;
  /** What the commands below name in capitals: files written here, the stand-in's URL. */
  const given: Record<string, string> = {
    PLAN: path.join(dir, 'tiny.yaml'),
    EARLIER: path.join(dir, 'tiny-1.json'),
    AFTER: path.join(dir, 'tiny-2.json'),
  };

  before(async () => {
    redis = await startStandInRedis();
    given.REDIS = redis.url;
    const planText = `
name: tiny
targets: [{ name: api, url: "http://127.0.0.1:9/" }]
experiments: [{ probe: reuse, requests: 1, modes: [reused] }]
`;
    await writeFile(given.PLAN!, planText);
    const { plan } = await parsePlan(planText, given.PLAN!);
    for (const [i, runId] of ['tiny-1', 'tiny-2'].entries()) {
      const at = new Date(Date.UTC(2026, 0, 1 + i));
      const report = buildRunReport({ runId, mode: 'embedded', plan, startedAt: at, finishedAt: at, results: [] });
      await writeFile(path.join(dir, `${runId}.json`), JSON.stringify(report));
    }
  });
  after(() => redis?.close());

  /** Each command, what it prints (so it ran to its end), and the heavy packages it needs: it may load no other. */
  const cases: { args: string[]; stdout: RegExp; needs: Heavy[] }[] = [
    { args: ['--version'], stdout: /^\d+\.\d+\.\d+\n$/, needs: [] },
    { args: ['--help'], stdout: /^probefleet <command> \[options\]/, needs: [] },
    { args: ['plan', 'validate', 'PLAN'], stdout: /plan "tiny" is valid/, needs: [] },
    { args: ['plan', 'expand', 'PLAN'], stdout: /^1 job$/m, needs: [] },
    { args: ['plan', 'schema'], stdout: /"\$schema"/, needs: [] },
    { args: ['report', 'EARLIER'], stdout: /^run tiny-1 \(embedded\)/, needs: [] },
    { args: ['compare', 'EARLIER', 'AFTER'], stdout: /^compare tiny-2 with the earlier run tiny-1/, needs: [] },
    { args: ['alerts', 'PLAN'], stdout: /^groups:/, needs: [] },
    // They read Redis with ioredis; BullMQ is for adding and removing schedules, and for runs.
    {
      args: ['schedule', 'list', '--redis', 'REDIS'],
      stdout: /^ +nightly +cron "0 2 \* \* \*" UTC .* eu-west, us-east +18$/m,
      needs: ['ioredis'],
    },
    { args: ['runs', 'list', '--redis', 'REDIS'], stdout: /^no stored runs/, needs: ['ioredis'] },
  ];
  for (const { args, stdout: expected, needs } of cases) {
    test(`probefleet ${args.join(' ')} loads ${needs.join(', ') || 'none of them'}`, async () => {
      const { heavy, logger, code, stdout, stderr } = await heavyLoadedBy(args.map((arg) => given[arg] ?? arg));
      assert.equal(code, 0, stderr);
      assert.match(stdout, expected);
      assert.deepEqual(heavy, needs);
      assert.equal(logger, false, `${LOGGER} loaded, with nothing logged`);
    });
  }

  test("schedule list builds none of the plan's or the report store's schemas: run as modules, it loads neither", async () => {
    // The bundle holds our modules, so the modules are run to see ours.
    const { urls, code, stdout, stderr } = await heavyLoadedBy(
      ['schedule', 'list', '--redis', given.REDIS!],
      CLI_MODULES_ENTRY,
    );
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^ +nightly .* eu-west, us-east +18$/m);
    assert.ok(
      urls.some((url) => url.endsWith('/dist/coordinator/schedule-list.js')),
      'the recording sees our modules',
    );
    for (const heavy of ['/dist/contracts/plan.js', '/dist/contracts/run-job.js', '/dist/coordinator/report-store.js'])
      assert.ok(!urls.some((url) => url.endsWith(heavy)), `${heavy} loaded`);
  });

  test('a command that logs loads pino then: schedule list logs why a Redis that is not there cannot be reached', async () => {
    const gone = await startStandInRedis();
    const url = gone.url;
    await gone.close();
    const { logger, code, stderr } = await heavyLoadedBy(['schedule', 'list', '--redis', url, '--redis-timeout', '1']);
    assert.equal(code, 4, stderr);
    assert.match(stderr, /"level":40,.*"name":"schedule",.*redis error/);
    assert.equal(logger, true);
  });

  test('what needs them loads them: the recording sees each of these packages', async () => {
    const { heavy, code, stderr } = await heavyLoadedBy(['worker', '--help']);
    assert.equal(code, 0, stderr);
    assert.deepEqual(heavy, [...HEAVY]);
  });
});
