// h2c: HTTP/2 without TLS. A connection that opens with the HTTP/2 preface goes to an HTTP/2
// server (prior knowledge); anything else to an HTTP/1.1 server, where `Upgrade: h2c` gets
// 101 Switching Protocols and its response as HTTP/2 frames on stream 1 (RFC 7540 §3.2).
// Node's http2 has no server side for the upgrade, so the lab answers stream 1 itself and then
// sends GOAWAY: more requests on that connection would need a full HTTP/2 server behind it.
import http, { type IncomingMessage } from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { encodeFrame, FRAME_FLAG, FRAME_TYPE, FrameReader, goawayFrame, H2_PREFACE } from '../../common/h2-frames.js';
import { EARLY_HINTS_LINK, handleLabRequest, LAB_PATHS } from '../routes.js';
import type { LabServerSpec } from '../server-spec.js';
import { handleLabH2Request } from './h2.js';

const UPGRADED_BODY = Buffer.from('hello from the probefleet lab, upgraded to h2c\n');
/** HPACK (RFC 7541): `:status` from the static table (index 8 is 200, 13 is 404), then content-type: text/plain as a literal. */
const CONTENT_TYPE_TEXT = Buffer.concat([Buffer.from([0x0f, 0x10, 10]), Buffer.from('text/plain')]);
const STATUS_200 = 0x88;
const STATUS_404 = 0x8d;
/** An upgraded connection that goes quiet is dropped after this. */
const UPGRADED_IDLE_MS = 5_000;

export const h2cServer: LabServerSpec<'h2c'> = {
  name: 'h2c',
  offset: 4,
  scheme: 'http',
  description:
    'HTTP/2 without TLS: prior knowledge, and Upgrade: h2c (101, the answer on stream 1, GOAWAY); else HTTP/1.1',
  create: () => {
    const h2 = http2.createServer(handleLabH2Request);
    const h1 = http.createServer({ keepAliveTimeout: 60_000 }, handleLabRequest);
    h1.on('upgrade', answerUpgrade);
    return net.createServer((socket) => routeByPreface(socket, h1, (s) => h2.emit('connection', s)));
  },
};

/** Reads until the first bytes are, or cannot be, the HTTP/2 preface, then hands the socket over with them. */
export function routeByPreface(socket: net.Socket, h1: http.Server, h2: (socket: net.Socket) => void): void {
  socket.on('error', () => socket.destroy());
  let seen = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2_PREFACE.length);
    const preface = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (preface && seen.length < H2_PREFACE.length) return;
    socket.off('data', onData);
    socket.pause();
    socket.unshift(seen);
    if (preface) {
      h2(socket);
    } else {
      h1.emit('connection', socket);
      // The HTTP/1.1 server reads the socket natively from here on; the bytes put back must flow as 'data' first.
      socket.resume();
    }
  };
  socket.on('data', onData);
}

function answerUpgrade(req: IncomingMessage, stream: Duplex, head: Buffer): void {
  const socket = stream as net.Socket;
  socket.on('error', () => socket.destroy());
  if (req.headers.upgrade?.toLowerCase() !== 'h2c') {
    socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  const path = (req.url ?? '/').split('?')[0];
  const known = LAB_PATHS.includes(path);
  const body = known ? UPGRADED_BODY : Buffer.from('not found\n');
  if (path === '/early-hints') socket.write(`HTTP/1.1 103 Early Hints\r\nLink: ${EARLY_HINTS_LINK}\r\n\r\n`);
  socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n');
  socket.write(
    Buffer.concat([
      encodeFrame(FRAME_TYPE.SETTINGS, 0, 0), // the server's connection preface
      encodeFrame(
        FRAME_TYPE.HEADERS,
        FRAME_FLAG.END_HEADERS,
        1,
        Buffer.concat([Buffer.from([known ? STATUS_200 : STATUS_404]), CONTENT_TYPE_TEXT]),
      ),
      encodeFrame(FRAME_TYPE.DATA, FRAME_FLAG.END_STREAM, 1, body),
    ]),
  );
  // The client now sends its preface and SETTINGS: acknowledge them, then close politely.
  const reader = new FrameReader((frame) => {
    if (frame.type === FRAME_TYPE.SETTINGS && (frame.flags & FRAME_FLAG.ACK) === 0) {
      socket.end(Buffer.concat([encodeFrame(FRAME_TYPE.SETTINGS, FRAME_FLAG.ACK, 0), goawayFrame(1)]));
    }
  }, H2_PREFACE.length);
  socket.on('data', (chunk: Buffer) => reader.feed(chunk));
  socket.setTimeout(UPGRADED_IDLE_MS, () => socket.destroy());
  reader.feed(head);
}
