// Generated inputs for the plan loader: every example plan, mutated (keys deleted, values of
// the wrong type, garbage bytes, cut short, lines out of place) with a fixed seed. Whatever the
// input, the loader accepts it or refuses it with PlanError problems that carry a position in
// the file (and a field, when the problem is not the YAML itself); it never throws anything
// else and never hangs: it runs in a worker thread that is stopped if one input takes too long.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import type { PlanProblem } from '../../coordinator/plan-loader.js';
import type { FuzzInput, FuzzMessage } from '../helpers/plan-fuzz-worker.js';
import { prng } from '../../common/stats.js';
import { mutatePlan } from '../helpers/plan-mutations.js';
import { REPO_ROOT } from '../helpers/repo.js';

const SEED = 20261130;
const INPUTS_PER_EXAMPLE = 60;
/** Far beyond any input's parse (about a millisecond): only a hang reaches it. */
const HANG_MS = 10_000;

/** Problems that are about the YAML (or the file as a whole) rather than one field. */
const WHOLE_FILE = /^(YAML: |a plan is a YAML mapping)/;

async function generatedInputs(): Promise<(FuzzInput & { mutations: string[] })[]> {
  const random = prng(SEED);
  const examples = (await readdir(path.join(REPO_ROOT, 'examples'))).filter((f) => f.endsWith('.yaml')).sort();
  const inputs = [];
  for (const example of examples) {
    const file = path.join(REPO_ROOT, 'examples', example);
    const original = await readFile(file, 'utf8');
    for (let n = 0; n < INPUTS_PER_EXAMPLE; n++) inputs.push({ file, ...mutatePlan(original, random) });
  }
  return inputs;
}

/** A problem in a target file the example reads (examples/file-sd/), which a mutated plan may read with other labels. */
const inTargetFile = (p: PlanProblem) =>
  /\.(json|ya?ml)$/.test(p.file) && path.resolve(p.file).startsWith(path.join(REPO_ROOT, 'examples', 'file-sd'));

function checkProblem(p: PlanProblem, input: FuzzInput): string | undefined {
  const lines = input.text.split(/\r\n|\r|\n|\u2028|\u2029/).length;
  if (inTargetFile(p))
    return p.line >= 1 && p.column >= 1 && p.message ? undefined : `in ${p.file}: ${JSON.stringify(p)}`;
  if (p.file !== input.file) return `names file ${p.file}`;
  if (!Number.isInteger(p.line) || p.line < 1 || p.line > lines + 1) return `line ${p.line} of a ${lines}-line input`;
  if (!Number.isInteger(p.column) || p.column < 1) return `column ${p.column}`;
  if (!p.message) return 'no message';
  if (!p.field && !WHOLE_FILE.test(p.message)) return `no field for "${p.message}"`;
  return undefined;
}

/** Runs the loader on every input in a worker thread; resolves with each input's outcome, or rejects naming the input that hung. */
function runLoader(inputs: FuzzInput[]): Promise<FuzzMessage[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('../helpers/plan-fuzz-worker.js', import.meta.url), { workerData: { inputs } });
    const outcomes: FuzzMessage[] = [];
    let watchdog: NodeJS.Timeout | undefined;
    worker.on('message', (message: FuzzMessage) => {
      clearTimeout(watchdog);
      if (message.kind === 'start') {
        watchdog = setTimeout(() => {
          void worker.terminate();
          reject(
            new Error(
              `the loader did not finish input ${message.index} within ${HANG_MS} ms:\n${inputs[message.index].text}`,
            ),
          );
        }, HANG_MS);
      } else {
        outcomes.push(message);
      }
    });
    worker.on('error', reject);
    worker.on('exit', () => {
      clearTimeout(watchdog);
      resolve(outcomes);
    });
  });
}

test('mutated example plans: the loader accepts them or refuses them with positioned problems, never anything else', async (t) => {
  const inputs = await generatedInputs();
  const outcomes = await runLoader(inputs);
  assert.equal(outcomes.length, inputs.length, 'every input ended');
  const failures: string[] = [];
  for (const outcome of outcomes) {
    const input = inputs[outcome.index];
    const label = `input ${outcome.index} (${path.basename(input.file)}: ${inputs[outcome.index].mutations.join(', ')})`;
    if (outcome.kind === 'other-throw') failures.push(`${label}: threw ${outcome.error}`);
    if (outcome.kind === 'plan-error') {
      if (outcome.problems.length === 0) failures.push(`${label}: a PlanError without problems`);
      for (const problem of outcome.problems) {
        const wrong = checkProblem(problem, input);
        if (wrong) failures.push(`${label}: ${wrong} (${JSON.stringify(problem)})`);
      }
    }
  }
  assert.deepEqual(failures, []);
  const refused = outcomes.filter((o) => o.kind === 'plan-error').length;
  t.diagnostic(`${inputs.length} inputs (seed ${SEED}): ${refused} refused, ${inputs.length - refused} still valid`);
  assert.ok(refused > inputs.length / 2, 'most mutations break the plan (the generator does its job)');
});
