// settledByBound: work that ignores its bound (a promise nothing will ever settle) still ends,
// with the overrun value, a grace period after its signal; work that stops in time keeps its own.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { oneAtATime, settledByBound, settlesWithin } from '../../common/settle.js';

describe('settledByBound', () => {
  test('a promise that never settles ends with the overrun value, and not before graceMs after the abort', async () => {
    const bound = new AbortController();
    let settled = false;
    const value = settledByBound(new Promise<string>(() => {}), bound.signal, 1000, () => 'overrun').then((v) => {
      settled = true;
      return v;
    });
    bound.abort();
    // Well inside the grace (a margin of 990 ms for a busy machine), it is still waiting.
    await sleep(10);
    assert.equal(settled, false);
    assert.equal(await value, 'overrun');
  });

  test('work that settles after the abort, within the grace, keeps its own value (and its rejection)', async () => {
    const bound = new AbortController();
    bound.abort();
    const late = new Promise<string>((resolve) => setTimeout(() => resolve('partial results'), 10));
    assert.equal(await settledByBound(late, bound.signal, 1000, () => 'overrun'), 'partial results');
    await assert.rejects(
      settledByBound(Promise.reject(new Error('a bug')), bound.signal, 1000, () => 'overrun'),
      /a bug/,
    );
  });

  test('without an abort, nothing is bounded', async () => {
    const never = new AbortController();
    const slow = new Promise<string>((resolve) => setTimeout(() => resolve('done'), 30));
    assert.equal(await settledByBound(slow, never.signal, 1, () => 'overrun'), 'done');
  });
});

describe('settlesWithin', () => {
  test('a bound past the longest timer Node keeps waits for the promise, and Node warns of nothing', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const later = sleep(20, 'answered');
      // 35 days: Node would fire a timer this long after 1 ms (TimeoutOverflowWarning).
      assert.equal(await settlesWithin(later, 35 * 86_400_000), true);
      assert.equal(await settlesWithin(new Promise(() => {}), 10), false);
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings, []);
  });
});

test('oneAtATime: each task starts once the ones before it settled, a failed one included', async () => {
  const inTurn = oneAtATime();
  const events: string[] = [];
  const release: (() => void)[] = [];
  const task =
    (name: string, fails = false) =>
    () => {
      events.push(`${name} started`);
      return new Promise<string>((resolve, reject) =>
        release.push(() => {
          events.push(`${name} ended`);
          if (fails) reject(new Error(name));
          else resolve(name);
        }),
      );
    };
  const first = inTurn(task('first', true));
  const second = inTurn(task('second'));
  const third = inTurn(task('third'));
  await sleep(10);
  assert.deepEqual(events, ['first started'], 'the others wait for the first');
  release.shift()!();
  await assert.rejects(first, /first/);
  await sleep(10);
  assert.deepEqual(events, ['first started', 'first ended', 'second started']);
  release.shift()!();
  assert.equal(await second, 'second');
  await sleep(10);
  release.shift()!();
  assert.equal(await third, 'third');
  assert.deepEqual(events.slice(3), ['second ended', 'third started', 'third ended']);
});
