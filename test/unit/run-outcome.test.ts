// A run's outcome as the exit code and its one line see it: every job with an error or without a result failed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProbeResult, UnfinishedJob } from '../../contracts/result.js';
import { failedJobsLine, runOutcome } from '../../coordinator/run-outcome.js';

const result = (code?: string) => ({ error: code ? { code, message: 'm' } : null }) as ProbeResult;
const unfinished = (status: UnfinishedJob['status']) => ({ status }) as UnfinishedJob;

test('every job with an error or without a result counts, most frequent reason first', () => {
  const outcome = runOutcome({
    results: [result(), result('CONNECTION_REFUSED'), result('TARGET_REFUSED_BY_POLICY'), result('CONNECTION_REFUSED')],
    unfinishedJobs: [unfinished('not-run'), unfinished('failed')],
  });
  assert.deepEqual(outcome, {
    jobs: 6,
    failed: 5,
    reasons: [
      ['CONNECTION_REFUSED', 2],
      ['FAILED', 1],
      ['NOT_RUN', 1],
      ['TARGET_REFUSED_BY_POLICY', 1],
    ],
  });
  assert.equal(
    failedJobsLine(outcome),
    '5 of 6 jobs failed: 2 CONNECTION_REFUSED, 1 FAILED, 1 NOT_RUN, 1 TARGET_REFUSED_BY_POLICY',
  );
});

test('a run whose every job measured has no failure line', () => {
  const outcome = runOutcome({ results: [result(), result()], unfinishedJobs: [] });
  assert.equal(outcome.failed, 0);
  assert.equal(failedJobsLine(outcome), undefined);
  assert.equal(
    failedJobsLine(runOutcome({ results: [result('DEADLINE_EXCEEDED')], unfinishedJobs: [] })),
    '1 of 1 job failed: 1 DEADLINE_EXCEEDED',
  );
});
