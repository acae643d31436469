// The plan's limits (contracts/limits.ts PLAN_LIMITS), each met by a plan generated here (the
// fixtures in test/fixtures/plans/bad/ hold the small ones): a file past its size or not a
// regular file, nesting thousands deep, a string past its length, and a million jobs, all
// refused with file, line and column (exit 2) before the work they bound is done.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { open, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PLAN_LIMITS } from '../../contracts/limits.js';
import { formatProblem, loadPlanFile, parsePlan, PlanError } from '../../coordinator/plan-loader.js';
import { withLabTargets } from '../../coordinator/lab-targets.js';
import { countJobs, splitPlan, TooManyJobsError } from '../../coordinator/split.js';
import { DEFAULT_LAB_PORT, labAddressAt } from '../../contracts/lab-roles.js';
import { REPO_ROOT, runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

/** What loadPlanFile refuses the file with, as `plan validate` prints it (without the file name). */
async function refusal(file: string): Promise<string[]> {
  const err = await loadPlanFile(file).then(
    () => assert.fail('accepted'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof PlanError, String(err));
  return err.problems.map((p) => formatProblem(p).slice(file.length + 1));
}

/** 50 regions x 100 targets x 50 drain experiments x 4 modes (one client) = 1,000,000 jobs, in 13 KB of YAML. */
function millionJobPlan(): string {
  const regions = Array.from({ length: 50 }, (_, i) => `r${i}`).join(', ');
  const targets = Array.from({ length: 100 }, (_, i) => `  - { name: t${i}, url: "http://127.0.0.1:9/" }`);
  const experiments = Array.from(
    { length: 50 },
    (_, i) => `  - { probe: drain, modes: [full, unread, drain, json], clients: [undici], requests: ${i + 1} }`,
  );
  return ['name: million', `regions: [${regions}]`, 'targets:', ...targets, 'experiments:', ...experiments, ''].join(
    '\n',
  );
}

const VALID_TAIL = 'targets: [{ name: api, url: "http://127.0.0.1:9/" }]\nexperiments: [{ probe: reuse }]\n';

describe('plan limits', () => {
  let dir: string;
  const file = (name: string) => path.join(dir, name);

  before(async () => {
    dir = tempDir('probefleet-plan-limits-');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('a file over the size limit is refused from its size, before it is read (a sparse 50 MB file)', async () => {
    const huge = await open(file('huge.yaml'), 'w');
    await huge.truncate(50 * 1024 * 1024);
    await huge.close();
    assert.deepEqual(await refusal(file('huge.yaml')), [
      '1:1: cannot read plan: 52,428,800 bytes, over the limit of 1,048,576 bytes',
    ]);
  });

  test('a FIFO, a directory or a device as the plan is bad input, at once (a FIFO would block the reader)', {
    timeout: 10_000,
  }, async () => {
    execFileSync('mkfifo', [file('plan.fifo')]);
    assert.deepEqual(await refusal(file('plan.fifo')), [
      '1:1: cannot read plan: a FIFO (named pipe), not a regular file',
    ]);
    assert.deepEqual(await refusal(dir), ['1:1: cannot read plan: a directory, not a regular file']);
    assert.deepEqual(await refusal('/dev/null'), ['1:1: cannot read plan: a character device, not a regular file']);
    const { code, stderr } = await runCli(['plan', 'validate', file('plan.fifo')], { timeoutMs: 10_000 });
    assert.equal(code, 2);
    assert.equal(stderr, `${file('plan.fifo')}:1:1: cannot read plan: a FIFO (named pipe), not a regular file\n`);
  });

  test('a CA file that is a FIFO is refused where the plan names it', { timeout: 10_000 }, async () => {
    execFileSync('mkfifo', [file('ca.fifo')]);
    await writeFile(
      file('ca-fifo.yaml'),
      'name: ca\ntargets:\n  - name: api\n    url: "https://127.0.0.1:9/"\n    tls: { ca: ca.fifo }\nexperiments: [{ probe: reuse }]\n',
    );
    const shown = path.relative(process.cwd(), file('ca.fifo'));
    assert.deepEqual(await refusal(file('ca-fifo.yaml')), [
      `5:16: targets[0].tls.ca: cannot read CA file ${shown}: a FIFO (named pipe), not a regular file`,
    ]);
  });

  test('3,000 levels of nesting, flow or block: refused where the limit is passed, exit 2 (it was 1, no position)', async () => {
    const depth = 3000;
    const flow = `name: deep\ntargets: ${'['.repeat(depth)}${']'.repeat(depth)}\nexperiments: [{ probe: reuse }]\n`;
    // Compact block sequences ("- - - x"): 3,000 levels in 6 KB.
    const block = `name: deep\nexperiments: [{ probe: reuse }]\ntargets:\n  ${'- '.repeat(depth)}x\n`;
    const limit = PLAN_LIMITS.nestingDepth;
    const message = `YAML: lists and mappings nested more than ${limit} deep (the limit; a plan needs 4)`;
    await writeFile(file('flow.yaml'), flow);
    await writeFile(file('block.yaml'), block);
    // The plan's mapping is the first level, `targets` the second: the limit is passed at the 32nd "[".
    assert.deepEqual(await refusal(file('flow.yaml')), [`2:${10 + limit - 1}: ${message}`]);
    assert.deepEqual(await refusal(file('block.yaml')), [`4:${3 + 2 * (limit - 1)}: ${message}`]);
    const { code, stdout, stderr } = await runCli(['plan', 'validate', file('flow.yaml')]);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.equal(stderr, `${file('flow.yaml')}:2:${10 + limit - 1}: ${message}\n`);
  });

  test('a list of 300,000 modes (600 KB): one problem at the list, exit 2 (it was a stack overflow, exit 1)', async () => {
    const modes = Array.from({ length: 300_000 }, () => 'x').join(',');
    await writeFile(
      file('long-list.yaml'),
      `name: long\ntargets: [{ name: a, url: "http://127.0.0.1:9/" }]\nexperiments:\n  - probe: reuse\n    modes: [${modes}]\n`,
    );
    const { code, stdout, stderr } = await runCli(['plan', 'validate', file('long-list.yaml')]);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.equal(
      stderr,
      `${file('long-list.yaml')}:5:12: YAML: a list or mapping of more than 1,000 items (the limit; a plan holds at most 100 targets and 50 experiments)\n`,
    );
  });

  test('many problems: the first 50 lines, then how many more', async () => {
    const modes = Array.from({ length: 900 }, (_, i) => `m${i}`).join(',');
    await writeFile(
      file('many-problems.yaml'),
      `name: many\ntargets: [{ name: a, url: "http://127.0.0.1:9/" }]\nexperiments:\n  - probe: reuse\n    modes: [${modes}]\n`,
    );
    const { code, stderr } = await runCli(['plan', 'validate', file('many-problems.yaml')]);
    assert.equal(code, 2);
    const lines = stderr.trimEnd().split('\n');
    assert.ok(lines.length <= 51, `${lines.length} lines`);
    assert.match(lines.at(-1)!, /^\.\.\. and \d+ more problems \(the first 50 are shown\)$/);
  });

  test('a string (or a key) over the length limit is refused at its field, before the schema', async () => {
    const long = 'x'.repeat(PLAN_LIMITS.stringChars + 1);
    await writeFile(file('long.yaml'), `name: long\ndescription: ${long}\n${VALID_TAIL}`);
    assert.deepEqual(await refusal(file('long.yaml')), [
      '2:14: description: 8,193 characters, over the limit of 8,192 characters per string',
    ]);
    const header = `name: long\ntargets:\n  - name: api\n    url: "http://127.0.0.1:9/"\n    headers: { ${long}: v }\nexperiments: [{ probe: reuse }]\n`;
    await writeFile(file('long-key.yaml'), header);
    assert.deepEqual(await refusal(file('long-key.yaml')), [
      '5:16: targets[0].headers: a key of 8,193 characters, over the limit of 8,192 characters per string',
    ]);
    const fine = 'x'.repeat(PLAN_LIMITS.stringChars);
    assert.equal(
      (await parsePlan(`name: long\ndescription: ${fine}\n${VALID_TAIL}`, 'inline.yaml')).plan.description,
      fine,
    );
  });

  test('a run in this process takes 10,000 jobs unless told more: it holds every result', async () => {
    // 100 targets x 50 experiments x 4 modes, one region: valid for workers, too many for one process.
    const plan = millionJobPlan().replace(/^regions: .*$/m, 'regions: [r0]');
    await writeFile(file('twenty-thousand.yaml'), plan);
    const valid = await runCli(['plan', 'validate', file('twenty-thousand.yaml')]);
    assert.equal(valid.code, 0, valid.stderr);
    assert.match(valid.stdout, /20,000 jobs per run/);
    assert.match(
      valid.stdout,
      /\n\S+twenty-thousand\.yaml: run without --redis, it makes 20,000 jobs, over the 10,000 one process takes \(--max-jobs raises it; --redis runs it on workers\)\n$/,
    );
    const { code, stdout, stderr } = await runCli(['run', file('twenty-thousand.yaml')]);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(
      stderr,
      /^\S+twenty-thousand\.yaml:105:3: experiments: 20,000 jobs per run, over the limit of 10,000 \(--max-jobs or PROBEFLEET_MAX_JOBS raise it\): 1 region x 20,000 jobs per region; .*; a run in this process holds every result until its report is written: run it on workers with --redis\n$/,
    );
  });

  test('a million jobs: counted, not made, and refused naming the limit and the product (validate took 734 MB)', async () => {
    await writeFile(file('million.yaml'), millionJobPlan());
    const { code, stdout, stderr } = await runCli(['plan', 'validate', file('million.yaml')]);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.equal(
      stderr,
      `${file('million.yaml')}:105:3: experiments: 1,000,000 jobs per run, over the limit of 100,000 (--max-jobs or PROBEFLEET_MAX_JOBS raise it): ` +
        '50 regions x 20,000 jobs per region; the most from experiments[0] (drain): 100 targets x 4 variants = 400, ' +
        'experiments[1] (drain): 100 targets x 4 variants = 400, experiments[2] (drain): 100 targets x 4 variants = 400 and 47 more\n',
    );
    // Raised far enough it is valid, and validating it still makes no job: the count is arithmetic.
    const raised = await runCli(['plan', 'validate', file('million.yaml'), '--max-jobs', '1000000']);
    assert.equal(raised.code, 0, raised.stderr);
    assert.match(raised.stdout, /100 targets, 50 experiments, 50 regions .*, 1,000,000 jobs per run/);
    const env = await runCli(['plan', 'validate', file('million.yaml')], { env: { PROBEFLEET_MAX_JOBS: '999999' } });
    assert.equal(env.code, 2);
    assert.match(env.stderr, /1,000,000 jobs per run, over the limit of 999,999/);
    const bad = await runCli(['plan', 'validate', file('million.yaml')], { env: { PROBEFLEET_MAX_JOBS: 'lots' } });
    assert.equal(bad.code, 2);
    assert.equal(bad.stderr, 'PROBEFLEET_MAX_JOBS must be a whole number of jobs, at least 1 (got "lots")\n');
  });

  test('splitPlan holds to the limit a plan was loaded with, before it makes a job (run --regions, schedules)', async () => {
    const loaded = await parsePlan(millionJobPlan(), 'million.yaml', { maxJobs: 1_000_000 });
    const fewer = { ...loaded, maxJobs: 999_999 };
    assert.throws(
      () => splitPlan(fewer, 'run-1'),
      (err: Error) =>
        err instanceof TooManyJobsError &&
        /^million\.yaml:105:3: experiments: 1,000,000 jobs per run, over the limit of 999,999/.test(err.message),
    );
    const oneRegion = { ...loaded, plan: { ...loaded.plan, regions: ['r0'] } };
    assert.equal(splitPlan(oneRegion, 'run-1').length, 20_000);
  });

  test('the count is what splitting makes, for every example plan', async () => {
    const examples = (await readdir(path.join(REPO_ROOT, 'examples'))).filter((f) => f.endsWith('.yaml'));
    for (const example of examples) {
      const loaded = await loadPlanFile(path.join(REPO_ROOT, 'examples', example));
      const atLab = withLabTargets(loaded, labAddressAt('127.0.0.1', DEFAULT_LAB_PORT), '');
      assert.equal(countJobs(loaded.plan).total, splitPlan(atLab, 'run-1').length, example);
    }
  });
});
