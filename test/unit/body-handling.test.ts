// Body handling: the JSON decoder of the drain probe's json mode stops exactly at the end of the
// first value; Http1Body, the reader the Go client policies use over a raw connection, unframes
// bodies as they arrive and says whether its reader got the body's end.
import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { describe, test } from 'node:test';
import {
  decodeJsonValue,
  Http1Body,
  http1Framing,
  undiciBodyChunks,
  type ResponseBody,
} from '../../worker/http/body.js';

const body = (...chunks: string[]) =>
  undiciBodyChunks(Readable.from(chunks.map((c) => Buffer.from(c))) as unknown as ResponseBody);

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

describe('http1Framing', () => {
  const cases: [string, string, number, Record<string, string>, ReturnType<typeof http1Framing>['kind']][] = [
    ['a HEAD response has no body', 'HEAD', 200, { 'content-length': '10' }, 'none'],
    ['204 has no body', 'GET', 204, {}, 'none'],
    ['304 has no body', 'GET', 304, { 'content-length': '10' }, 'none'],
    ['Content-Length: 0 is no body', 'GET', 200, { 'content-length': '0' }, 'none'],
    ['Content-Length', 'GET', 200, { 'content-length': '10' }, 'length'],
    [
      'chunked wins over Content-Length',
      'GET',
      200,
      { 'transfer-encoding': 'chunked', 'content-length': '10' },
      'chunked',
    ],
    ['a coding that does not end in chunked runs until close', 'GET', 200, { 'transfer-encoding': 'gzip' }, 'close'],
    ['neither: until close', 'GET', 200, {}, 'close'],
  ];
  for (const [name, method, status, headers, kind] of cases) {
    test(name, () => assert.equal(http1Framing(method, status, headers).kind, kind));
  }
  test('a Content-Length that is not one number is malformed', () => {
    assert.throws(
      () => http1Framing('GET', 200, { 'content-length': '5, 6' }),
      (err: Error & { code?: string }) => err.code === 'EWIRE_MALFORMED',
    );
  });
});

describe('Http1Body', () => {
  /** A body over a socket stand-in: `rest` arrived with the head, `later` arrives read by read. */
  function http1Body(headers: Record<string, string>, rest: string, ...later: string[]) {
    const socket = new PassThrough();
    socket.pause();
    for (const chunk of later) socket.write(chunk);
    return new Http1Body(socket, http1Framing('GET', 200, headers), Buffer.from(rest, 'latin1'));
  }
  const readAll = async (b: Http1Body) => {
    const parts: string[] = [];
    for await (const chunk of b) parts.push(chunk.toString('latin1'));
    return parts.join('');
  };

  test('Content-Length: complete once the reader took the last byte, not before', async () => {
    const b = http1Body({ 'content-length': '5' }, 'hello');
    assert.equal(b.complete, false, 'the whole body arrived, but nobody read it');
    assert.equal(await readAll(b), 'hello');
    assert.equal(b.complete, true);
    assert.equal(b.delivered, 5);
  });

  test('chunked, its framing split across reads, trailers included', async () => {
    const b = http1Body(
      { 'transfer-encoding': 'chunked' },
      '5\r\nhel',
      'lo\r\n6;ext=1\r\n world\r',
      '\n0\r\nx-t: 1\r\n\r\n',
    );
    assert.equal(await readAll(b), 'hello world');
    assert.equal(b.complete, true);
    assert.equal(b.excess, 0);
  });

  test('an empty chunked body is complete only once read (Content-Length: 0 has no body to read)', async () => {
    const b = http1Body({ 'transfer-encoding': 'chunked' }, '0\r\n\r\n');
    assert.equal(b.complete, false, 'its end arrived, but nobody read it');
    assert.equal(await readAll(b), '');
    assert.equal(b.complete, true);
    assert.equal(http1Body({ 'content-length': '0' }, '').complete, true);
  });

  test('closed before the end: nothing more is read, and it is not complete', async () => {
    const b = http1Body({ 'content-length': '10' }, 'hello', 'world');
    const iterator = b[Symbol.asyncIterator]();
    assert.equal(((await iterator.next()).value as Buffer).toString(), 'hello');
    b.close();
    assert.equal((await iterator.next()).done, true);
    assert.equal(b.complete, false);
    assert.equal(b.delivered, 5);
  });

  test('bytes after the body are counted as excess', async () => {
    const b = http1Body({ 'content-length': '2' }, 'okHTTP/1.1');
    assert.equal(await readAll(b), 'ok');
    assert.equal(b.excess, 8);
  });

  test('a chunk size that is not hex is malformed', async () => {
    await assert.rejects(
      readAll(http1Body({ 'transfer-encoding': 'chunked' }, '', 'zz\r\n')),
      (err: Error & { code?: string }) => err.code === 'EWIRE_MALFORMED',
    );
  });
});
