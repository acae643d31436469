// Counts as every message and report writes them: grouped as toLocaleString('en-US') groups them,
// without loading ICU's number formats.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { plural, thousands } from '../../common/plural.js';
import { propertyParams } from '../helpers/property-runs.js';

test('thousands groups any number as toLocaleString("en-US") does', () => {
  fc.assert(
    fc.property(fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.double({ noNaN: true })), (n) => {
      assert.equal(thousands(n), n.toLocaleString('en-US'));
    }),
    propertyParams(),
  );
  for (const n of [0, 999, 1_000, -1_000, 100_000, 1_000_000, Number.MAX_SAFE_INTEGER, 0.5, -0])
    assert.equal(thousands(n), n.toLocaleString('en-US'), String(n));
});

test('plural: "1 job", "0 jobs", "10,001 jobs"', () => {
  assert.deepEqual(
    [1, 0, 10_001].map((n) => plural(n, 'job')),
    ['1 job', '0 jobs', '10,001 jobs'],
  );
});
