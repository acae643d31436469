import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { formatProblem, loadPlanFile, PlanError } from '../../coordinator/plan-loader.js';
import { BAD_PLANS_DIR, badPlans } from '../helpers/bad-plans.js';
import { writePlan } from '../helpers/plans.js';
import { REPO_ROOT, runCli } from '../helpers/repo.js';

// Every malformed plan in the corpus through the loader, and one per stage of loading through the
// real CLI (a CLI start costs one to two seconds here, so the rest stay in-process): exit 2,
// nothing on stdout, and exactly the lines its header expects, each naming file, line, column and field.
const THROUGH_THE_CLI = [
  'yaml-syntax', // the YAML parser
  'nesting-too-deep', // the shape limits, before parsing into values
  'duplicate-key',
  'wrong-type', // the schema
  'duplicate-experiment-target', // cross-references
  'missing-ca-file', // files the plan names
  'header-value-crlf', // values printed with their control characters escaped
  'too-many-jobs', // the job count, before any job is made
].map((name) => `${BAD_PLANS_DIR}/${name}.yaml`);
const CLI_AT_ONCE = 3;

const corpus = await badPlans();

describe('plan validation', () => {
  before(() => {
    // Messages name files relative to the working directory, as the CLI does from the repository root.
    process.chdir(REPO_ROOT);
  });

  test('the corpus has at least 50 malformed plans, each stating what it expects', () => {
    assert.ok(corpus.length >= 50, `${corpus.length} fixtures`);
    for (const { file, expected } of corpus) assert.ok(expected.length > 0, `${file} has no "# expect:" line`);
    for (const file of THROUGH_THE_CLI)
      assert.ok(
        corpus.some((p) => p.file === file),
        `${file} is in the corpus`,
      );
  });

  for (const { file, expected } of corpus) {
    test(`${path.basename(file)}: the loader refuses it with file, line, column and field`, async () => {
      const err = await loadPlanFile(file).then(
        () => assert.fail('accepted'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof PlanError, `a PlanError, not ${String(err)}`);
      assert.deepEqual(err.problems.map(formatProblem), expected);
    });
  }

  test('plan validate on one of each kind: exit 2, nothing on stdout, the expected lines on stderr', async () => {
    const queue = [...THROUGH_THE_CLI];
    const check = async () => {
      for (let file = queue.shift(); file; file = queue.shift()) {
        const { code, stdout, stderr } = await runCli(['plan', 'validate', file]);
        assert.equal(code, 2, file);
        assert.equal(stdout, '', file);
        assert.equal(
          stderr,
          corpus
            .find((p) => p.file === file)!
            .expected.map((line) => `${line}\n`)
            .join(''),
        );
      }
    };
    await Promise.all(Array.from({ length: CLI_AT_ONCE }, check));
  });

  test('plan expand refuses an invalid plan the same way', async () => {
    const { code, stderr } = await runCli(['plan', 'expand', `${BAD_PLANS_DIR}/unknown-probe.yaml`]);
    assert.equal(code, 2);
    assert.match(stderr, /experiments\[0\]\.probe: unknown probe "ping"/);
  });

  test('a missing plan file is an error naming the file', async () => {
    const { code, stderr } = await runCli(['plan', 'validate', 'no/such/plan.yaml']);
    assert.equal(code, 2);
    assert.match(stderr, /^no\/such\/plan\.yaml:1:1: cannot read plan: ENOENT/);
  });

  test('every example plan is valid; plan validate says so for one', async () => {
    const examples = (await readdir(path.join(REPO_ROOT, 'examples'))).filter((f) => f.endsWith('.yaml'));
    assert.ok(examples.length > 0);
    for (const example of examples) await loadPlanFile(`examples/${example}`);
    const { code, stdout, stderr } = await runCli(['plan', 'validate', 'examples/lecture-keepalive.yaml']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /is valid/);
  });

  test('counts are said in words: one of a kind is singular', async () => {
    const file = await writePlan(
      'name: one\ntargets: [{ name: api, url: "http://127.0.0.1:18170/" }]\nexperiments: [{ probe: reuse, modes: [reused] }]\n',
    );
    const { code, stdout, stderr } = await runCli(['plan', 'validate', file]);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /is valid: 1 target, 1 experiment, 1 region \(local\), 1 job per run$/m);
    const expanded = await runCli(['plan', 'expand', file]);
    assert.match(expanded.stdout, /\n1 job\n$/);
  });
});
