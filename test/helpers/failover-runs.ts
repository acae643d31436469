// A distributed run through real processes while Redis fails over (Sentinel, Cluster): the plan,
// the moment to break Redis (a job running), and what must hold after (every job once, the report
// stored by the coordinator too).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runReportSchema, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { openFleet } from '../../coordinator/fleet.js';
import type { Lab } from '../../lab/index.js';
import { writePlan } from './plans.js';
import { spawnCli, type CliProcess } from './processes.js';
import { runCli } from './repo.js';
import { tempDir } from './temp-dir.js';

const log = createLogger('test', 'silent');

/** How long a run of the plan below may take on a busy machine, a failover included. */
export const RUN_BOUND_MS = 180_000;

/** The exit code of a process, or a failure with its log when it runs longer than `ms`. */
export async function exitWithin(process: CliProcess, ms: number): Promise<number | null> {
  // Unreferenced: a process that ended leaves no timer keeping the test file alive.
  const code = await Promise.race([process.exited, sleep(ms, 'running' as const, { ref: false })]);
  if (code === 'running') assert.fail(`still running after ${ms} ms:\n${process.stderr()}`);
  return code;
}

/**
 * How each of a fleet's commands ends on `args` (--redis ... --prefix ...): a worker and a
 * coordinator (added to `started`, for the test to stop), `run` of `plan`, `runs list`, then each of
 * `more` (a command's arguments). For a Redis every command must refuse, each with its own message.
 */
export async function howFleetCommandsEnd(
  args: string[],
  plan: string,
  started: CliProcess[],
  more: string[][] = [],
): Promise<[what: string, ended: { code: number | null; stderr: string }][]> {
  const worker = spawnCli(['worker', '--region', 'a', ...args, '--allow-loopback']);
  const coordinator = spawnCli(['coordinator', ...args, '--port', '0']);
  started.push(worker, coordinator);
  const ended: [string, { code: number | null; stderr: string }][] = [
    ['worker', { code: await exitWithin(worker, 60_000), stderr: worker.stderr() }],
    ['coordinator', { code: await exitWithin(coordinator, 60_000), stderr: coordinator.stderr() }],
    ['run', await runCli(['run', plan, ...args])],
    ['runs list', await runCli(['runs', 'list', ...args])],
  ];
  for (const command of more) ended.push([command.slice(0, 2).join(' '), await runCli([...command, ...args])]);
  return ended;
}

export interface FailoverRun {
  run: CliProcess;
  /** Where `run --json` writes the report. */
  json: string;
}

/**
 * `probefleet run` of a plan with two jobs per region (a, b): a slow one (100 reused requests to
 * the Nagle endpoint, ~40 ms each), then a quick one. Resolves once region a's slow job runs,
 * the moment to break Redis.
 */
export async function startFailoverRun(
  lab: Lab,
  redis: { url: string; prefix: string },
  runId: string,
): Promise<FailoverRun> {
  const planFile = await writePlan(`
name: ${runId}
regions: [a, b]
jobTimeoutSeconds: 60
targets:
  - { name: slow, url: "${lab.url('keepalive', '/nagle')}" }
  - { name: quick, url: "${lab.url('keepalive')}" }
experiments:
  - { probe: reuse, targets: [slow], requests: 100, modes: [reused] }
  - { probe: reuse, targets: [quick], requests: 5, modes: [new] }
`);
  const json = path.join(tempDir('probefleet-failover-'), 'run.json');
  const run = spawnCli([
    'run',
    planFile,
    ...['--redis', redis.url, '--prefix', redis.prefix, '--run-id', runId, '--json', json],
  ]);
  const fleet = openFleet({ redis: { url: redis.url }, prefix: redis.prefix, log });
  try {
    let active = 0;
    for (let i = 0; i < 600 && active === 0 && run.child.exitCode === null; i++) {
      active = (await fleet.regionQueue('a').getActive()).filter((job) => job.id?.includes('.slow.')).length;
      if (active === 0) await sleep(50);
    }
    assert.equal(active, 1, `region a's slow job is running:\n${run.stderr()}`);
  } catch (err) {
    await run.stop('SIGKILL');
    throw err;
  } finally {
    await fleet.close();
  }
  return { run, json };
}

/**
 * The run ended (exit 0) with every job of the plan exactly once, each ok, and the job running
 * when Redis broke (at `brokenAt`, if it did) finished after that; the coordinator processed the
 * run too (its parent job gone) and stored the same report. Returns the report. A run that did not
 * end so says what the fleet's processes (`services`) logged last: what a worker did through the
 * failover is in its log, not the run's.
 */
export async function everyJobOnce(
  { run, json }: FailoverRun,
  redis: { url: string; prefix: string },
  brokenAt?: number,
  services: CliProcess[] = [],
): Promise<RunReport> {
  const logs = () =>
    services.map((p, i) => `\n--- service ${i}, last of its log ---\n${p.stderr().slice(-4000)}`).join('');
  assert.equal(await exitWithin(run, RUN_BOUND_MS), 0, `${run.stderr()}${logs()}`);
  const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
  assert.deepEqual(report.unfinishedJobs, [], logs());
  const ids = report.results.map((r) => r.jobId);
  assert.equal(new Set(ids).size, ids.length, `no job twice: ${ids.join(', ')}`);
  assert.deepEqual(report.results.map((r) => `${r.region}/${r.target}`).sort(), [
    'a/quick',
    'a/slow',
    'b/quick',
    'b/slow',
  ]);
  assert.ok(
    report.results.every((r) => r.ok),
    'every job ok',
  );
  const inFlight = report.results.find((r) => r.region === 'a' && r.target === 'slow')!;
  if (brokenAt !== undefined)
    assert.ok(Date.parse(inFlight.finishedAt) > brokenAt, 'the job in flight finished after Redis broke');

  const fleet = openFleet({ redis: { url: redis.url }, prefix: redis.prefix, log });
  try {
    for (let i = 0; i < 200 && (await fleet.runs.getJob(report.runId)) !== undefined; i++) await sleep(100);
    const left = await fleet.runs.getJob(report.runId);
    assert.ok(
      left === undefined,
      `the coordinator processed the run (its parent job is ${await left?.getState()})${logs()}`,
    );
  } finally {
    await fleet.close();
  }
  const shown = await runCli(['runs', 'show', report.runId, '--json', '--redis', redis.url, '--prefix', redis.prefix]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.equal((JSON.parse(shown.stdout) as RunReport).finishedAt, report.finishedAt, 'the same report stored');
  return report;
}
