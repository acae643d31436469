// What a target sends is parsed by code that cannot throw and gives only numbers that can be
// stored: every generated string through the value parsers and the Alt-Svc analysis.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  dateMs,
  deltaSeconds,
  isoDate,
  MAX_DELTA_SECONDS,
  percentDecoded,
  portNumber,
} from '../../common/target-values.js';
import { parseH3AltSvc } from '../../coordinator/analysis-alt-svc.js';
import { propertyParams } from '../helpers/property-runs.js';

const digits = fc.bigInt({ min: 0n, max: 10n ** 400n }).map(String);
/** Alt-Svc-shaped text with hostile parts: escapes, huge numbers, quotes, commas. */
const altSvcText = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc
    .tuple(
      fc.constantFrom('h3', 'h3-29', 'H3', '%', '%E0%A4%A', 'h%33', 'h2', 'clear'),
      fc.string({ maxLength: 10 }),
      digits,
      digits,
    )
    .map(([p, host, port, ma]) => `${p}="${host}:${port}"; ma=${ma}; persist=1, h3=":${port}"`),
);

test('the value parsers never throw and give finite numbers in range, or null', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), digits), (text) => {
      const decoded = percentDecoded(text);
      assert.ok(decoded === null || typeof decoded === 'string');
      const seconds = deltaSeconds(text);
      assert.ok(seconds === null || (Number.isInteger(seconds) && seconds >= 0 && seconds <= MAX_DELTA_SECONDS));
      const port = portNumber(text);
      assert.ok(port === null || (Number.isInteger(port) && port >= 1 && port <= 65_535));
      const ms = dateMs(text);
      assert.ok(ms === null || Number.isFinite(ms));
      const iso = isoDate(ms);
      assert.ok(iso === null || /^\d{4}-\d\d-\d\dT/.test(iso), String(iso));
    }),
    propertyParams(),
  );
});

test('Alt-Svc: any value gives advertisements of finite ports and ages, never an exception', () => {
  fc.assert(
    fc.property(altSvcText, (value) => {
      for (const ad of parseH3AltSvc(value)) {
        assert.ok(Number.isInteger(ad.port) && ad.port >= 1 && ad.port <= 65_535, JSON.stringify(ad));
        assert.ok(Number.isInteger(ad.maxAgeSeconds) && ad.maxAgeSeconds <= MAX_DELTA_SECONDS, JSON.stringify(ad));
        assert.match(ad.protocol, /^h3(-\w+)?$/);
      }
    }),
    propertyParams(),
  );
  assert.deepEqual(parseH3AltSvc('%="x:1"'), []);
  assert.deepEqual(parseH3AltSvc(`h3=":443"; ma=${'9'.repeat(400)}`), [
    { protocol: 'h3', host: '', port: 443, maxAgeSeconds: MAX_DELTA_SECONDS },
  ]);
});
