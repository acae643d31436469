// h2c whose every HTTP/2 response is preceded by a server push that the server itself resets:
// PUSH_PROMISE on the request's stream, RST_STREAM on the promised one, then the response. Node's
// http2 server cannot push to a client that disabled push, and a hostile server does not ask,
// so the frames are written by hand (no HPACK decoding: only static-table entries go out).
// HTTP/1.1 requests are answered by the lab's routes.
import http from 'node:http';
import net from 'node:net';
import { encodeFrame, FRAME_FLAG, FRAME_TYPE, FrameReader, H2_PREFACE } from '../../common/h2-frames.js';
import { handleLabRequest } from '../routes.js';
import type { LabServerSpec } from '../server-spec.js';
import { routeByPreface } from './h2c.js';

const BODY = Buffer.from('hello from the probefleet lab, after a reset push\n');
/** HPACK static table: `:status: 200` (8); the promised request `:method: GET` (2), `:scheme: http` (6), `:path: /` (4), `:authority: lab` (1, literal). */
const STATUS_200 = Buffer.from([0x88]);
const PROMISED_REQUEST = Buffer.concat([Buffer.from([0x82, 0x86, 0x84, 0x41, 3]), Buffer.from('lab')]);
const INTERNAL_ERROR = 0x2;
/** A connection that goes quiet is dropped after this. */
const IDLE_MS = 5_000;

export const h2PushResetServer: LabServerSpec<'h2-push-reset'> = {
  name: 'h2-push-reset',
  offset: 31,
  scheme: 'http',
  description:
    'h2c: every HTTP/2 response comes after a PUSH_PROMISE whose promised stream the server resets (RST_STREAM INTERNAL_ERROR), pushed whether or not the client allows push',
  create: () => {
    const h1 = http.createServer(handleLabRequest);
    return net.createServer((socket) => routeByPreface(socket, h1, answerWithResetPushes));
  },
};

function answerWithResetPushes(socket: net.Socket): void {
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  let promised = 0;
  const reader = new FrameReader((frame) => {
    if (frame.type === FRAME_TYPE.SETTINGS && (frame.flags & FRAME_FLAG.ACK) === 0) {
      socket.write(encodeFrame(FRAME_TYPE.SETTINGS, FRAME_FLAG.ACK, 0));
    } else if (frame.type === FRAME_TYPE.HEADERS && frame.flags & FRAME_FLAG.END_HEADERS) {
      promised += 2;
      const promise = Buffer.alloc(4);
      promise.writeUInt32BE(promised);
      const reset = Buffer.alloc(4);
      reset.writeUInt32BE(INTERNAL_ERROR);
      socket.write(
        Buffer.concat([
          encodeFrame(
            FRAME_TYPE.PUSH_PROMISE,
            FRAME_FLAG.END_HEADERS,
            frame.streamId,
            Buffer.concat([promise, PROMISED_REQUEST]),
          ),
          encodeFrame(FRAME_TYPE.RST_STREAM, 0, promised, reset),
          encodeFrame(FRAME_TYPE.HEADERS, FRAME_FLAG.END_HEADERS, frame.streamId, STATUS_200),
          encodeFrame(FRAME_TYPE.DATA, FRAME_FLAG.END_STREAM, frame.streamId, BODY),
        ]),
      );
    }
  }, H2_PREFACE.length);
  socket.write(encodeFrame(FRAME_TYPE.SETTINGS, 0, 0)); // the server's connection preface
  socket.on('data', (chunk: Buffer) => reader.feed(chunk));
  socket.resume();
}
