// Response checks on their own: what passes and what fails, with the message a report shows, and
// that no response a server can send (any status, headers, bytes) makes one throw or backtrack.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { CHECKED_BODY_BYTES, responseChecksSchema } from '../../contracts/request.js';
import { printable } from '../../common/printable.js';
import { CheckedBody, ResponseCheck } from '../../worker/http/response-checks.js';

const check = (checks: object) => new ResponseCheck(responseChecksSchema.parse(checks));

test('status: codes and classes; 2xx when nothing is said', () => {
  const byDefault = new ResponseCheck();
  assert.equal(byDefault.failure(204), undefined);
  assert.deepEqual(byDefault.failure(302), {
    code: 'RESPONSE_CHECK_FAILED',
    message: 'response check failed: status 302, not 2xx',
  });
  const listed = check({ status: [200, '3xx'] });
  assert.equal(listed.failure(200), undefined);
  assert.equal(listed.failure(301), undefined);
  assert.match(listed.failure(201)!.message, /status 201, not 200, 3xx$/);
});

test('headers: present and matching, names without case; a repeated header is its values joined', () => {
  const c = check({ headers: { 'Content-Type': '^application/json', 'x-id': '^[0-9]+$' } });
  assert.equal(c.readsHeaders, true);
  assert.equal(c.readsBody, false);
  assert.equal(c.failure(200, { 'content-type': 'application/json; charset=utf-8', 'x-id': '42' }), undefined);
  assert.match(
    c.failure(200, { 'content-type': 'text/html', 'x-id': '42' })!.message,
    /header content-type: "text\/html" does not match/,
  );
  assert.match(c.failure(200, { 'content-type': 'application/json' })!.message, /no x-id header/);
  assert.match(
    c.failure(200, { 'content-type': 'application/json', 'x-id': ['1', '2'] })!.message,
    /"1, 2" does not match/,
  );
});

test('a header the check wants is one the response has, never one an object inherits', () => {
  const c = check({ headers: { constructor: '.', toString: '.' } });
  assert.match(c.failure(200, {})!.message, /no constructor header/);
  assert.match(c.failure(200, { constructor: 'x' })!.message, /no tostring header/);
  assert.equal(c.failure(200, { constructor: 'x', tostring: 'y' }), undefined);
});

test('body: must match, must not match; the status is checked first', () => {
  const c = check({ bodyMatches: '"status":\\s*"ok"', bodyNotMatches: '(?i)sign in' });
  assert.equal(c.failure(200, {}, Buffer.from('{"status": "ok"}')), undefined);
  assert.match(c.failure(200, {}, Buffer.from('{"status": "down"}'))!.message, /the body does not match/);
  assert.match(
    c.failure(200, {}, Buffer.from('"status":"ok" <a>Sign In</a>'))!.message,
    /matches \/\(\?i\)sign in\/, which it must not/,
  );
  assert.match(c.failure(503, {}, Buffer.from('{"status": "ok"}'))!.message, /status 503/);
});

test('a body is kept up to CHECKED_BODY_BYTES, and the message says when that is all the check saw', () => {
  const kept = new CheckedBody();
  for (let i = 0; i < 3; i++) kept.add(Buffer.alloc(CHECKED_BODY_BYTES / 2, 'a'));
  assert.equal(kept.bytes.length, CHECKED_BODY_BYTES);
  const c = check({ bodyMatches: 'b' });
  assert.match(c.failure(200, {}, kept.bytes)!.message, /the body \(its first 1,048,576 bytes\) does not match/);
});

test('an expression that backtracks for ever in a backtracking engine is linear here', () => {
  // (a+)+$ against a^n b takes 2^n steps in a backtracking engine; RE2 answers in one pass.
  const c = check({ bodyMatches: '(a+)+$' });
  assert.match(c.failure(200, {}, Buffer.from(`${'a'.repeat(CHECKED_BODY_BYTES - 1)}b`))!.message, /does not match/);
});

test('whatever a server sends, a check answers: no throw, and a failure is RESPONSE_CHECK_FAILED', () => {
  const c = check({
    status: ['2xx', 404],
    bodyMatches: 'ok',
    bodyNotMatches: '(?s)<html>.*login',
    headers: { 'content-type': 'json|text' },
  });
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 10_000 }),
      fc.dictionary(fc.string({ maxLength: 20 }), fc.oneof(fc.string(), fc.array(fc.string()), fc.integer())),
      fc.uint8Array({ maxLength: 4096 }),
      (status, headers, body) => {
        const failure = c.failure(status, headers, Buffer.from(body));
        assert.ok(failure === undefined || failure.code === 'RESPONSE_CHECK_FAILED');
        // Whatever the server put in a header, the message is printable.
        assert.ok(failure === undefined || printable(failure.message) === failure.message, failure?.message);
      },
    ),
    { numRuns: 500 },
  );
});
