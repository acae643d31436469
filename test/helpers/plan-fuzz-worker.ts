// Runs the plan loader on generated inputs in a worker thread, so the test can stop it (and
// name the input) if one ever hangs. Reports each input's start, and how the loader ended.
import { parentPort, workerData } from 'node:worker_threads';
import { parsePlan, PlanError, type PlanProblem } from '../../coordinator/plan-loader.js';

export interface FuzzInput {
  /** The file the input pretends to be (the example it was made from, so relative CA paths resolve). */
  file: string;
  text: string;
}

export type FuzzMessage =
  | { kind: 'start'; index: number }
  | { kind: 'valid'; index: number }
  | { kind: 'plan-error'; index: number; problems: PlanProblem[] }
  | { kind: 'other-throw'; index: number; error: string };

const inputs = (workerData as { inputs: FuzzInput[] }).inputs;
const post = (message: FuzzMessage) => parentPort!.postMessage(message);
for (const [index, { file, text }] of inputs.entries()) {
  post({ kind: 'start', index });
  try {
    await parsePlan(text, file);
    post({ kind: 'valid', index });
  } catch (err) {
    if (err instanceof PlanError) post({ kind: 'plan-error', index, problems: err.problems });
    else post({ kind: 'other-throw', index, error: (err as Error)?.stack ?? String(err) });
  }
}
