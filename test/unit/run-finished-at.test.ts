// When a distributed run finished: its last job's end, or its deadline if jobs were still waited
// for then; never when someone got to building its report (a coordinator back after being down).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProbeResult, UnfinishedJob } from '../../contracts/result.js';
import { runFinishedAt } from '../../coordinator/run-finisher.js';

const finishedAt = (iso: string) => ({ finishedAt: iso }) as ProbeResult;
const job = (status: UnfinishedJob['status']) => ({ status }) as UnfinishedJob;
const deadline = '2026-12-03T10:00:00.000Z';
const now = new Date('2026-12-03T12:00:00.000Z');

test('a run ends when its last job did, whenever its report is built', () => {
  const cases: [string, ProbeResult[], UnfinishedJob[], string][] = [
    [
      'the last result',
      [finishedAt('2026-12-03T09:00:01.000Z'), finishedAt('2026-12-03T09:00:03.000Z')],
      [],
      '2026-12-03T09:00:03.000Z',
    ],
    [
      'jobs not run: waited for until the deadline',
      [finishedAt('2026-12-03T09:00:03.000Z')],
      [job('not-run')],
      deadline,
    ],
    [
      'a failed job has no time of its own',
      [finishedAt('2026-12-03T09:00:03.000Z')],
      [job('failed')],
      '2026-12-03T09:00:03.000Z',
    ],
    ['nothing ran, nothing waited for: now', [], [job('failed')], now.toISOString()],
    ['never later than now', [finishedAt('2026-12-03T13:00:00.000Z')], [], now.toISOString()],
  ];
  for (const [what, results, unfinished, expected] of cases)
    assert.equal(
      runFinishedAt(Math.max(...results.map((r) => Date.parse(r.finishedAt))), unfinished, deadline, now).toISOString(),
      expected,
      what,
    );
});
