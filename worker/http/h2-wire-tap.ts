// A pass-through stream between node:http2 and a socket that reads the frames going by, so a
// request's header bytes are counted per stream, exactly. node:http2 has no per-stream byte
// counter, and socket byte-count diffs mix in SETTINGS, WINDOW_UPDATE and DATA frames.
// Give it to `http2.connect(..., {createConnection: () => tap})`.
import type net from 'node:net';
import { Duplex } from 'node:stream';
import { FrameReader, H2_PREFACE, isHeaderBlockFrame } from '../../common/h2-frames.js';

export interface HeaderBytes {
  /** HEADERS and CONTINUATION frames the client sent on the stream, frame headers included. */
  request: number;
  /** The same, received (response headers, and trailers if any). */
  response: number;
}

/** How many bytes of the peer's first answer are kept, to say what it answered when it is not HTTP/2. */
const FIRST_BYTES_KEPT = 64;

export class H2WireTap extends Duplex {
  private readonly perStream = new Map<number, HeaderBytes>();
  private readonly sent = new FrameReader((f) => {
    if (isHeaderBlockFrame(f.type)) this.tally(f.streamId).request += f.wireBytes;
  }, H2_PREFACE.length);
  private readonly received = new FrameReader((f) => {
    if (isHeaderBlockFrame(f.type)) this.tally(f.streamId).response += f.wireBytes;
  });
  /** The first bytes the peer sent (its SETTINGS frame, or e.g. "HTTP/1.1 400 Bad Request"). */
  firstBytesIn: Buffer = Buffer.alloc(0);

  constructor(private readonly socket: net.Socket) {
    super();
    socket.on('data', (chunk: Buffer) => {
      if (this.firstBytesIn.length < FIRST_BYTES_KEPT) {
        this.firstBytesIn = Buffer.concat([this.firstBytesIn, chunk]).subarray(0, FIRST_BYTES_KEPT);
      }
      this.received.feed(chunk);
      if (!this.push(chunk)) socket.pause();
    });
    socket.once('end', () => this.push(null));
    socket.once('error', (err) => this.destroy(err));
    socket.once('close', () => this.destroy());
  }

  /** Header bytes of one stream so far (zeros for a stream never seen). */
  headerBytes(streamId: number): HeaderBytes {
    return { ...(this.perStream.get(streamId) ?? { request: 0, response: 0 }) };
  }

  private tally(streamId: number): HeaderBytes {
    let bytes = this.perStream.get(streamId);
    if (!bytes) {
      bytes = { request: 0, response: 0 };
      this.perStream.set(streamId, bytes);
    }
    return bytes;
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.sent.feed(chunk);
    this.socket.write(chunk, callback);
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.socket.end(callback);
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.socket.destroy();
    callback(err);
  }
}
