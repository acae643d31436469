// The JSON decoder of the drain probe's json mode stops exactly at the end of the first value.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { decodeJsonValue, type ResponseBody } from '../../worker/http/body.js';

const body = (...chunks: string[]) => Readable.from(chunks.map((c) => Buffer.from(c))) as unknown as ResponseBody;

describe('decodeJsonValue', () => {
  test('stops at the closing bracket, leaving what follows unread', async () => {
    assert.deepEqual(await decodeJsonValue(body('{"a":1}\n')), { bytes: 7 });
    assert.deepEqual(await decodeJsonValue(body('  [1,', '[2]]', '\n\n')), { bytes: 9 });
  });

  test('brackets and escaped quotes inside strings do not end the value', async () => {
    const text = '{"s":"}]\\"{","t":[{}]}';
    assert.deepEqual(await decodeJsonValue(body(text.slice(0, 5), text.slice(5), '\n')), { bytes: text.length });
  });

  test('a body that is not a JSON object or array is refused with UNEXPECTED_BODY', async () => {
    for (const bad of ['hello', '{"a":', '{"a":tru}']) {
      await assert.rejects(
        decodeJsonValue(body(bad)),
        (err: Error & { code?: string }) => err.code === 'UNEXPECTED_BODY',
        bad,
      );
    }
  });
});
