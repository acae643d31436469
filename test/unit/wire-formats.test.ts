// The hand-rolled wire formats the http2 probe and the lab rely on: HTTP/2 frames split
// across reads, and HTTP/1.1 response heads counted byte for byte.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import {
  encodeFrame,
  FRAME_FLAG,
  FRAME_TYPE,
  FrameReader,
  goawayFrame,
  H2_PREFACE,
  type Frame,
} from '../../common/h2-frames.js';
import { http1RequestHead, readHttp1ResponseHead } from '../../worker/http/raw-http1.js';

describe('HTTP/2 frames', () => {
  test('a byte stream cut anywhere gives the same frames, after a skipped preface', () => {
    const wire = Buffer.concat([
      H2_PREFACE,
      encodeFrame(FRAME_TYPE.SETTINGS, 0, 0),
      encodeFrame(FRAME_TYPE.HEADERS, FRAME_FLAG.END_HEADERS, 1, Buffer.from([0x82, 0x84])),
      encodeFrame(FRAME_TYPE.DATA, FRAME_FLAG.END_STREAM, 1, Buffer.from('hello')),
      goawayFrame(1),
    ]);
    for (const cut of [1, 5, 9, 24, 30, 33, 40, wire.length - 1]) {
      const frames: Frame[] = [];
      const reader = new FrameReader((f) => frames.push({ ...f, payload: Buffer.from(f.payload) }), H2_PREFACE.length);
      reader.feed(wire.subarray(0, cut));
      reader.feed(wire.subarray(cut));
      assert.deepEqual(
        frames.map((f) => [f.type, f.flags, f.streamId, f.wireBytes]),
        [
          [FRAME_TYPE.SETTINGS, 0, 0, 9],
          [FRAME_TYPE.HEADERS, FRAME_FLAG.END_HEADERS, 1, 11],
          [FRAME_TYPE.DATA, FRAME_FLAG.END_STREAM, 1, 14],
          [FRAME_TYPE.GOAWAY, 0, 0, 17],
        ],
        `cut at ${cut}`,
      );
      assert.equal(frames[2].payload.toString(), 'hello');
      assert.equal(frames[3].payload.readUInt32BE(0), 1, 'GOAWAY names the last stream');
    }
  });
});

describe('HTTP/1.1 heads', () => {
  test('the request head is the bytes sent, Host first, ending in a blank line', () => {
    const head = http1RequestHead('GET', '/a?b=1', '127.0.0.1:8080', { 'user-agent': 'probefleet', accept: '*/*' });
    assert.equal(
      head.toString(),
      'GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nuser-agent: probefleet\r\naccept: */*\r\n\r\n',
    );
  });

  test('a response head split over reads is counted to its blank line; what follows is kept', async () => {
    const socket = new PassThrough();
    const reading = readHttp1ResponseHead(socket);
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nX-A: 1\r\n');
    socket.write('x-a: 2\r\n\r\n\x00\x00\x00\x04');
    const head = await reading;
    assert.equal(head.status, 101);
    assert.equal(head.httpVersion, '1.1');
    assert.deepEqual(head.headers, { upgrade: 'h2c', 'x-a': '1, 2' });
    assert.equal(head.headBytes, 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nX-A: 1\r\nx-a: 2\r\n\r\n'.length);
    assert.deepEqual([...head.rest], [0, 0, 0, 4]);
  });

  test('interim heads (103 Early Hints, 100 Continue) are read past and counted; 101 is final', async () => {
    const hints = 'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload; as=style\r\n\r\n';
    const cont = 'HTTP/1.1 100 Continue\r\n\r\n';
    const final = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n';
    const socket = new PassThrough();
    const reading = readHttp1ResponseHead(socket);
    socket.write(hints.slice(0, 20));
    socket.write(hints.slice(20) + cont + final.slice(0, 5));
    socket.write(`${final.slice(5)}ok`);
    const head = await reading;
    assert.equal(head.status, 200);
    assert.equal(head.headBytes, hints.length + cont.length + final.length);
    assert.equal(head.rest.toString(), 'ok');

    const upgrade = new PassThrough();
    const upgrading = readHttp1ResponseHead(upgrade);
    upgrade.write(`${hints}HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n`);
    assert.equal((await upgrading).status, 101);
  });

  test('an answer that is not HTTP/1.x, or no answer at all, is an error with a code', async () => {
    const binary = new PassThrough();
    const notHttp = readHttp1ResponseHead(binary);
    binary.write(encodeFrame(FRAME_TYPE.SETTINGS, 0, 0));
    await assert.rejects(notHttp, { code: 'EWIRE_MALFORMED' });

    const closed = new PassThrough();
    const nothing = readHttp1ResponseHead(closed);
    closed.end();
    await assert.rejects(nothing, { code: 'EWIRE_CLOSED', message: 'connection closed without an answer' });
  });
});
