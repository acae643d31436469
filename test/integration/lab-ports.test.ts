// `run --lab` when the lab's default ports are taken, `run --lab-at` for a lab already running,
// and a plan naming lab servers with no lab: the real CLI, the real lab.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { DEFAULT_LAB_PORT } from '../../contracts/lab-roles.js';
import { LabPortInUseError, startLab, type Lab } from '../../lab/index.js';
import { writePlan } from '../helpers/plans.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const PLAN = `
name: lab-roles
targets:
  - { name: http, url: "lab:keepalive/" }
  - { name: https, url: "lab:https/", tls: { insecure: true } }
experiments:
  - { probe: reuse, requests: 3, modes: [reused] }
`;

async function runWith(args: string[]) {
  const dir = tempDir('probefleet-lab-ports-');
  const json = path.join(dir, 'run.json');
  const plan = await writePlan(PLAN);
  try {
    const run = await runCli(['run', plan, '--json', json, ...args], { env: { REDIS_URL: '' } });
    const report = existsSync(json)
      ? (runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport)
      : undefined;
    return { ...run, report };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(path.dirname(plan), { recursive: true, force: true });
  }
}

/** Holds 127.0.0.1:port for the test (or finds it held already: taken either way). */
async function holdPort(port: number): Promise<net.Server | undefined> {
  const server = net.createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

test('run --lab with port 18170 taken: the lab takes free ports, says so, and lab: targets follow it', async () => {
  const held = await holdPort(DEFAULT_LAB_PORT);
  try {
    const { code, stderr, report } = await runWith(['--lab']);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /^lab: port \d+ is taken; the lab listens on free ports instead \(keepalive on (\d+);/m);
    const keepalivePort = Number(/keepalive on (\d+)/.exec(stderr)![1]);
    assert.deepEqual(
      report!.plan.targets.map((t) => t.url),
      [`http://127.0.0.1:${keepalivePort}/`, report!.plan.targets[1].url],
    );
    assert.notEqual(new URL(report!.plan.targets[1].url).port, String(DEFAULT_LAB_PORT + 2));
    assert.ok(
      report!.results.every((r) => r.ok && r.summary.requests === 3),
      JSON.stringify(report!.results.map((r) => r.error)),
    );
  } finally {
    await new Promise((resolve) => (held ? held.close(resolve) : resolve(undefined)));
  }
});

test('run --lab-at HOST:PORT measures a lab already running there', async () => {
  let lab: Lab | undefined;
  // A base port whose 30 lab ports are free: a few random tries.
  for (let attempt = 0; !lab && attempt < 10; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    lab = await startLab({ basePort: base, log: createLogger('test', 'silent') }).catch((err: unknown) => {
      if (err instanceof LabPortInUseError) return undefined;
      throw err;
    });
  }
  assert.ok(lab, 'no free range of lab ports');
  try {
    const base = lab.servers.keepalive.port;
    const { code, stderr, report } = await runWith(['--lab-at', `127.0.0.1:${base}`]);
    assert.equal(code, 0, stderr);
    assert.deepEqual(
      report!.plan.targets.map((t) => t.url),
      [`http://127.0.0.1:${base}/`, `https://127.0.0.1:${base + 2}/`],
    );
    assert.equal(lab.servers.https.connectionsAccepted(), 1, 'the https job reached this lab, over one connection');
    assert.ok(report!.results.every((r) => r.ok));
  } finally {
    await lab.close();
  }
});

test('a plan naming lab servers without --lab or --lab-at is bad input, and runs nothing', async () => {
  const { code, stderr, report } = await runWith([]);
  assert.equal(code, 2);
  assert.match(
    stderr,
    /plan\.yaml: targets http, https name a lab server \(lab:\.\.\.\); run with --lab \(starts one\) or --lab-at HOST:PORT \(one already running\)/,
  );
  assert.equal(report, undefined);
});
