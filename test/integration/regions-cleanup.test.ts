// Emulated regions leave nothing behind: not after close(), not after Ctrl-C, not after a setup
// that fails halfway; after SIGKILL the helpers exit by themselves and the next start (or
// `probefleet regions cleanup`) removes the namespaces. Parallel harnesses never collide.
// `probefleet demo` interrupted mid-run leaves no namespace and none of its fleet's processes
// (Prometheus and the Pushgateway included, with their files under the regions' run directory).
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { isRunning, listNamespaces, runDirFor } from '../../regions/cleanup.js';
import { startRegions } from '../../regions/harness.js';
import { RegionsUnavailableError } from '../../regions/preflight.js';
import { writePlan } from '../helpers/plans.js';
import { prometheusMissing } from '../helpers/prometheus.js';
import { CLI, runCli } from '../helpers/repo.js';
import { regionsSkipReason } from '../helpers/regions.js';
import { runAlone } from '../helpers/exclusive.js';

// Measures at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

const log = createLogger('test', 'warn');
const HOLDER = fileURLToPath(new URL('../fixtures/regions-holder.js', import.meta.url));

interface Made {
  id: string;
  namespaces: string[];
  pids: number[];
}

/** Processes whose command line contains `text`. */
function processesNaming(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Processes of an instance: everything inside its namespaces, and the relay on this machine
 * (its command line names the instance's run directory). */
function processesOf(id: string, namespaces: string[]): number[] {
  const inNamespaces = namespaces.flatMap((ns) =>
    execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).split(/\s+/).filter(Boolean).map(Number),
  );
  return [...new Set([...inNamespaces, ...processesNaming(runDirFor(id))])];
}

function assertGone(made: Made): void {
  const left = listNamespaces().filter((ns) => made.namespaces.includes(ns));
  assert.deepEqual(left, [], 'namespaces left behind');
  const running = made.pids.filter(isRunning);
  assert.deepEqual(running, [], 'helper processes left running');
  assert.equal(existsSync(runDirFor(made.id)), false, 'run directory left behind');
}

function startHolder(): Promise<{ child: ChildProcess; made: Made }> {
  const child = spawn(process.execPath, [HOLDER, '6379'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (!out.includes('\n')) return;
      const { id, namespaces } = JSON.parse(out) as { id: string; namespaces: string[] };
      resolve({ child, made: { id, namespaces, pids: processesOf(id, namespaces) } });
    });
    child.once('exit', (code) => reject(new Error(`holder exited (${code}) before its regions were up`)));
  });
}

async function waitFor(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return condition();
}

const skip = regionsSkipReason();

describe('emulated regions leave nothing behind', { skip }, () => {
  test('close() removes the namespaces, the helper processes and the run directory; twice is fine', async () => {
    const regions = await startRegions({
      regions: [
        { name: 'a', rttMs: 10, ipv6RttMs: 20 },
        { name: 'b', rttMs: 0 },
      ],
      forwardPorts: [6379],
      log,
    });
    const namespaces = [regions.target.namespace, ...regions.regions.map((r) => r.namespace)];
    assert.deepEqual(
      listNamespaces()
        .filter((ns) => namespaces.includes(ns))
        .sort(),
      [...namespaces].sort(),
    );
    const made = { id: regions.id, namespaces, pids: processesOf(regions.id, namespaces) };
    // nfq-delay in a for each link (IPv4, IPv6), a relay in a and in b, and the relay on this machine.
    assert.ok(made.pids.length >= (regions.delay === 'nfqueue' ? 5 : 3), `helpers: ${made.pids.join(', ')}`);
    await regions.close();
    await regions.close();
    assertGone(made);
  });

  test('Ctrl-C (SIGINT) removes everything before the process ends', async () => {
    const { child, made } = await startHolder();
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    child.kill('SIGINT');
    assert.equal(await exited, 'SIGINT', 'the process still ends by the signal');
    // The relay on this machine is outside the namespaces: it exits when its stdin closes, as the process ends.
    await waitFor(() => made.pids.every((pid) => !isRunning(pid)), 2_000);
    assertGone(made);
  });

  test('after SIGKILL the helpers exit by themselves, and `probefleet regions cleanup` removes the namespaces', async () => {
    const { child, made } = await startHolder();
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
    assert.ok(
      await waitFor(() => made.pids.every((pid) => !isRunning(pid)), 5_000),
      `helpers still running: ${made.pids.filter(isRunning).join(', ')}`,
    );
    assert.ok(
      listNamespaces().includes(made.namespaces[0]),
      'nothing could remove the namespaces of a killed process yet',
    );
    const { code, stdout, stderr } = await runCli(['regions', 'cleanup']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, new RegExp(made.id));
    assertGone(made);
  });

  test('a setup that fails halfway removes what it made', async (t) => {
    const mine = () => listNamespaces().filter((ns) => ns.startsWith(`pf-${process.pid}-`));
    const before = mine();
    try {
      const regions = await startRegions({ regions: [{ name: 'x', rttMs: 10 }], delay: 'netem', log });
      await regions.close();
      t.skip('this kernel has netem, so asking for it does not fail here');
      return;
    } catch (err) {
      assert.ok(err instanceof RegionsUnavailableError, String(err));
      assert.match(err.message, /netem/);
    }
    assert.deepEqual(mine(), before);
    assert.deepEqual(
      readdirSync(tmpdir()).filter((entry) => entry.startsWith(`probefleet-regions-${process.pid}-`)),
      [],
    );
  });

  test('probefleet demo: Ctrl-C in the middle of the run stops every process of the fleet and removes the regions', async (t) => {
    // 200 requests at 20 ms: the run is still going when the signal comes.
    const plan = await writePlan(`
name: interrupted
targets: [{ name: http, url: "http://10.77.0.1:18170/" }]
experiments: [{ probe: reuse, requests: 200, modes: [reused] }]
`);
    t.after(() => rm(path.dirname(plan), { recursive: true, force: true }));
    const demo = spawn(process.execPath, [CLI, 'demo', plan, '--region', 'solo=20ms'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    demo.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    demo.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      demo.once('exit', (_code, signal) => resolve(signal)),
    );
    assert.ok(
      await waitFor(() => /jobs done per region/.test(stderr) || demo.exitCode !== null, 60_000),
      `the run did not start:\n${stdout}\n${stderr}`,
    );

    const id = /pf-(\d+-[0-9a-f]{4})-target/.exec(stdout)![1];
    const namespaces = listNamespaces().filter((ns) => ns.startsWith(`pf-${id}-`));
    // redis-server, the Pushgateway and Prometheus (when installed), the coordinator, the worker,
    // `probefleet run` (its command line names the plan), the regions' helpers.
    const fleet = [
      ...stdout.matchAll(/^\s+(?:redis-server|pushgateway|prometheus|coordinator|worker \S+)\s+(\d+)\s/gm),
    ].map((m) => Number(m[1]));
    const runs = processesNaming(plan).filter((pid) => pid !== demo.pid);
    assert.equal(fleet.length, prometheusMissing ? 3 : 5, stdout);
    assert.equal(runs.length, 1, 'probefleet run is running');
    const made = { id, namespaces, pids: [...fleet, ...runs, ...processesOf(id, namespaces)] };

    demo.kill('SIGINT');
    assert.equal(await exited, 'SIGINT', 'the demo still ends by the signal');
    // Processes tied to the demo get their SIGKILL as it exits; give the kernel a moment.
    assert.ok(
      await waitFor(() => made.pids.every((pid) => !isRunning(pid)), 5_000),
      `still running: ${made.pids.filter(isRunning).join(', ')}`,
    );
    assertGone(made);
  });

  test('two harnesses side by side do not touch each other', async () => {
    const [a, b] = await Promise.all([
      startRegions({ regions: [{ name: 'same', rttMs: 5 }], log }),
      startRegions({ regions: [{ name: 'same', rttMs: 5 }], log }),
    ]);
    assert.notEqual(a.id, b.id);
    await a.close();
    assert.ok(listNamespaces().includes(b.region('same').namespace), 'closing one harness removed the other');
    // b still works: its region reaches its target host (nothing listens: refused, not unreachable).
    const out = await b
      .exec(b.region('same').namespace, 'curl', [
        '-sS',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `http://${b.target.address}:9/`,
      ])
      .catch((err: Error) => err.message);
    assert.match(out, /Connection refused|Failed to connect/);
    await b.close();
  });
});
