// How one load's threads share it out and are added back together (worker/http/load-threads.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newLatencyHistogram, recordMs } from '../../common/latency-histogram.js';
import type { LoadOutcome } from '../../worker/http/load-generator.js';
import { mergeOutcomes, shareOut } from '../../worker/http/load-threads.js';

test('connections are shared out evenly, the larger shares first, none lost', () => {
  assert.deepEqual(shareOut(10, 2), [5, 5]);
  assert.deepEqual(shareOut(7, 3), [3, 2, 2]);
  assert.deepEqual(shareOut(2, 2), [1, 1]);
  for (let total = 1; total <= 50; total++)
    for (let shares = 1; shares <= total; shares++) {
      const out = shareOut(total, shares);
      assert.equal(
        out.reduce((a, b) => a + b, 0),
        total,
      );
      assert.ok(Math.max(...out) - Math.min(...out) <= 1);
    }
});

function outcome(latenciesMs: number[], changes: Partial<LoadOutcome> = {}): LoadOutcome {
  const latency = newLatencyHistogram();
  for (const ms of latenciesMs) recordMs(latency, ms);
  return {
    concurrency: 2,
    latency,
    sent: latenciesMs.length,
    completed: latenciesMs.length,
    failed: 0,
    errors: {},
    statusClasses: [0, 0, latenciesMs.length, 0, 0, 0, 0, 0, 0, 0],
    bodyBytes: 19 * latenciesMs.length,
    connectionsOpened: 2,
    protocols: { h2: 2 },
    durationMs: 1000,
    stoppedBy: 'duration',
    eventLoopUtilization: 0.5,
    ...changes,
  };
}

test('shares are added: counts summed, histograms merged, the longest share and the weightiest stop', () => {
  const a = outcome([1, 2, 3], { errors: { RESPONSE_TIMEOUT: 1 }, failed: 1 });
  const b = outcome([10, 20], {
    durationMs: 1200,
    stoppedBy: 'failures',
    errors: { RESPONSE_TIMEOUT: 2, CONNECTION_RESET: 1 },
    failed: 3,
    protocols: { h2: 1, 'http/1.1': 1 },
    eventLoopUtilization: 0.95,
  });
  const merged = mergeOutcomes([a, b]);
  assert.equal(merged.completed, 5);
  assert.equal(merged.latency.totalCount, 5);
  assert.equal(Math.round(merged.latency.maxValue / 1000), 20);
  assert.equal(merged.failed, 4);
  assert.deepEqual(merged.errors, { RESPONSE_TIMEOUT: 3, CONNECTION_RESET: 1 });
  assert.deepEqual(merged.protocols, { h2: 3, 'http/1.1': 1 });
  assert.equal(merged.statusClasses[2], 5);
  assert.equal(merged.concurrency, 4);
  assert.equal(merged.durationMs, 1200);
  assert.equal(merged.stoppedBy, 'failures');
  assert.equal(merged.eventLoopUtilization, 0.95);
  assert.equal(a.latency.totalCount, 3, 'the shares themselves are left as they were');
});
