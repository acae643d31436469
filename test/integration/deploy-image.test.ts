// The Dockerfile against the package, without a Docker engine (none runs here): its entry point,
// command and health check are the package's real scripts, the runtime stage copies every file
// they load, and the image's command lines (through tini, as PID 1 runs them) start, answer the
// health check, and stop cleanly on SIGTERM. Redis: the test's own prefix on the shared one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  execForm,
  hostPathOf,
  loadCompose,
  readDockerfile,
  runtimeFiles,
  type DockerInstruction,
} from '../helpers/deploy.js';
import { spawnCli, type CliProcess } from '../helpers/processes.js';
import { onPath } from '../helpers/prometheus.js';
import { deletePrefix, freePort, needsRedis, requireRedis, testPrefix, TEST_REDIS_URL } from '../helpers/redis.js';
import { REPO_ROOT } from '../helpers/repo.js';

const instructions = readDockerfile();
const runtime = instructions.filter((i) => i.stage === 'runtime');
const build = instructions.filter((i) => i.stage === 'build');
const one = (keyword: string) => {
  const found = runtime.filter((i) => i.keyword === keyword);
  assert.equal(found.length, 1, `one ${keyword} in the runtime stage`);
  return found[0]!;
};
const entrypoint = execForm(one('ENTRYPOINT'));
const cmd = execForm(one('CMD'));
const healthcheck = execForm(one('HEALTHCHECK'));
const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  bin: Record<string, string>;
  engines: { node: string };
};

/** Repository paths a stage's COPY instructions bring in (from the context, or --from=build's /app). */
function copied(stage: DockerInstruction[], from?: string): string[] {
  return stage
    .filter((i) => i.keyword === 'COPY' && (from ? i.args.includes(`--from=${from}`) : !i.args.includes('--from=')))
    .flatMap((i) => {
      const parts = i.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      return parts.slice(0, -1).map((p) => p.replace(/^\/app\//, ''));
    });
}

describe('Dockerfile', () => {
  test('two stages from one current Node LTS image; the runtime stage runs as a non-root user', () => {
    assert.deepEqual([...new Set(instructions.map((i) => i.stage))], ['', 'build', 'runtime']);
    const image = /^NODE_IMAGE=node:(\d+)-/.exec(instructions.find((i) => i.keyword === 'ARG')!.args);
    assert.ok(image, 'ARG NODE_IMAGE=node:<major>-...');
    const major = Number(image[1]);
    assert.ok(major % 2 === 0 && major >= 22, `node ${major}: an LTS line (even), 22 or later`);
    assert.ok(major >= Number(/(\d+)/.exec(pkg.engines.node)![1]), 'within engines.node');
    for (const stage of ['build', 'runtime'])
      assert.ok(
        instructions.some((i) => i.keyword === 'FROM' && i.stage === stage && i.args.startsWith('${NODE_IMAGE}')),
        stage,
      );
    const user = one('USER').args;
    assert.ok(!['root', '0'].includes(user), `USER ${user}`);
    assert.ok(
      runtime.some((i) => i.keyword === 'RUN' && /npm ci --omit=dev/.test(i.args)),
      'production dependencies only',
    );
  });

  test("the entry point is tini, then the package's bin; the health check is the shipped script", () => {
    assert.deepEqual(entrypoint.slice(0, 3), ['/usr/bin/tini', '--', 'node']);
    assert.ok(
      runtime.some((i) => i.keyword === 'RUN' && /apt-get install .*\btini\b/.test(i.args)),
      'tini is installed',
    );
    assert.equal(
      path.normalize(entrypoint[3]!),
      path.normalize(pkg.bin.probefleet!),
      "ENTRYPOINT runs package.json's bin",
    );
    assert.equal(healthcheck[0], 'node');
    assert.equal(cmd[0], 'coordinator');
  });

  test('the runtime stage copies every file its scripts load, and the build stage the sources of what it compiles', () => {
    const fromContext = copied(runtime);
    const fromBuild = copied(runtime, 'build');
    const inImage = (file: string) =>
      [...fromContext, ...fromBuild].some((c) => file === c || file.startsWith(`${c}/`));
    for (const script of [entrypoint[3]!, healthcheck[1]!]) {
      const files = runtimeFiles(path.join(REPO_ROOT, script));
      assert.ok(files.size > (script === entrypoint[3] ? 50 : 0), `${script}: ${files.size} files`);
      const missing = [...files].filter((f) => !inImage(f));
      assert.deepEqual(missing, [], `${script} loads files the image does not have`);
    }
    for (const dist of fromBuild) {
      const source = dist.replace(/^dist\//, '');
      assert.ok(copied(build).includes(source), `the build stage compiles ${source} (COPY ${source})`);
    }
    const ignored = readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['node_modules', 'dist']) assert.ok(ignored.includes(entry), `.dockerignore: ${entry}`);
  });
});

describe("the image's command lines, run as the image runs them", needsRedis, () => {
  const compose = loadCompose();
  const prefix = testPrefix();
  const tini = entrypoint[0]!;
  const started: CliProcess[] = [];
  after(async () => {
    await Promise.all(started.map((p) => p.stop('SIGKILL')));
    await deletePrefix(TEST_REDIS_URL, prefix);
  });

  /** The service's environment from compose, on the test's Redis and prefix, without the stack's Pushgateway (a host that exists only there). */
  function envOf(service: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      ...compose.get(service)!.environment,
      REDIS_URL: TEST_REDIS_URL,
      PROBEFLEET_PREFIX: prefix,
      PROBEFLEET_PUSHGATEWAY: '',
      ...extra,
    };
  }

  /** ENTRYPOINT + arguments: through tini when it is installed (ensure.sh installs it), else node alone. */
  function start(args: string[], env: NodeJS.ProcessEnv): CliProcess {
    if (process.env.CI === 'true')
      assert.ok(onPath(tini), `${tini} missing: run bash test/services/ensure.sh as root (installs tini)`);
    const proc = spawnCli(args, env, onPath(tini) ? entrypoint.slice(0, 2) : []);
    started.push(proc);
    return proc;
  }

  function health(url: string): Promise<number> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        healthcheck.slice(1),
        { cwd: REPO_ROOT, env: { ...process.env, PROBEFLEET_HEALTH_URL: url }, timeout: 10_000 },
        (err) => resolve(err ? (typeof err.code === 'number' ? err.code : 1) : 0),
      );
    });
  }

  test('CMD: the coordinator starts, is healthy, and exits 0 on SIGTERM', async () => {
    requireRedis();
    const port = await freePort();
    const coordinator = start([...cmd, '--port', String(port)], envOf('coordinator'));
    await coordinator.waitFor(/"msg":"coordinator ready"/);
    assert.equal(await health(`http://127.0.0.1:${port}/healthz`), 0);
    assert.equal(await coordinator.stop('SIGTERM'), 0);
    assert.match(coordinator.stderr(), /"msg":"coordinator stopped"/);
    assert.equal(await health(`http://127.0.0.1:${port}/healthz`), 1, 'the health check fails when nothing answers');
  });

  test('each compose worker: starts with its command and environment, serves its health URL, drains and exits 0 on SIGTERM', async () => {
    requireRedis();
    const workers = [...compose.values()].filter((s) => s.command[0] === 'worker');
    assert.equal(workers.length, 3);
    for (const service of workers) {
      const port = await freePort();
      const worker = start(service.command, envOf(service.name, { PROBEFLEET_METRICS_PORT: String(port) }));
      await worker.waitFor(/"msg":"worker ready"/);
      const url = new URL(service.environment.PROBEFLEET_HEALTH_URL!);
      url.port = String(port);
      assert.equal(await health(url.href), 0, `${service.name}: ${url.href}`);
      assert.equal(await worker.stop('SIGTERM'), 0, service.name);
      assert.match(worker.stderr(), /"msg":"worker stopped"/);
    }
  });

  test("lab: the lab target starts with its command line (on free ports here) and answers its health URL's path", async () => {
    const service = compose.get('lab')!;
    const lab = start([...service.command, '--port', '0'], envOf('lab'));
    let stdout = '';
    lab.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const until = Date.now() + 20_000;
    while (!/Ctrl-C to stop/.test(stdout) && Date.now() < until && lab.child.exitCode === null)
      await new Promise((r) => setTimeout(r, 50));
    const keepalive = /\bhttp:\/\/[^\s]+:(\d+)\b/.exec(stdout);
    assert.ok(keepalive, `no lab URL in:\n${stdout}${lab.stderr()}`);
    const url = new URL(service.environment.PROBEFLEET_HEALTH_URL!);
    assert.equal(Number(url.port), 18170, "the lab's first server, where the health check asks");
    url.port = keepalive[1]!;
    assert.equal(await health(url.href), 0, url.href);
    assert.equal(await lab.stop('SIGTERM'), 0);
  });

  test("schedule-nightly: registers the mounted example plan's schedule and exits 0", async () => {
    requireRedis();
    const service = compose.get('schedule-nightly')!;
    const args = service.command.map((a) => hostPathOf(service, a) ?? a);
    const schedule = start(args, envOf(service.name));
    let stdout = '';
    schedule.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    assert.equal(await schedule.exited, 0, schedule.stderr());
    assert.match(
      stdout,
      /^schedule compose-nightly: cron "0 2 \* \* \*" UTC, 18 jobs over eu-west, us-east, ap-south; next run /,
    );
  });
});
