// HTTP/2 framing (RFC 9113 §4), just enough to count and recognise frames on the wire: the
// http2 probe taps node:http2's connection with it, checks an `Upgrade: h2c` answer, and the
// lab's h2c server answers an upgraded request with it. No HPACK here.

/** What a client sends before its first frame (RFC 9113 §3.4). */
export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

export const FRAME_HEADER_BYTES = 9;

export const FRAME_TYPE = {
  DATA: 0x0,
  HEADERS: 0x1,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  GOAWAY: 0x7,
  CONTINUATION: 0x9,
} as const;

export const FRAME_FLAG = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
} as const;

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
  /** Frame header plus payload: what it took on the wire. */
  wireBytes: number;
}

export function encodeFrame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  header.writeUIntBE(payload.length, 0, 3);
  header.writeUInt8(type, 3);
  header.writeUInt8(flags, 4);
  header.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([header, payload]);
}

/** A GOAWAY frame: no stream after `lastStreamId` will be processed (error code 0: NO_ERROR). */
export function goawayFrame(lastStreamId: number, errorCode = 0): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(lastStreamId & 0x7fffffff, 0);
  payload.writeUInt32BE(errorCode, 4);
  return encodeFrame(FRAME_TYPE.GOAWAY, 0, 0, payload);
}

/**
 * Splits a byte stream into frames, across chunk boundaries. `skip` bytes at the start (a
 * client's preface) are not frames. Frames are at most 16 MiB by the protocol; what is
 * buffered is at most one frame.
 */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  constructor(
    private readonly onFrame: (frame: Frame) => void,
    private skip = 0,
  ) {}

  feed(chunk: Buffer): void {
    if (this.skip > 0) {
      const skipped = Math.min(this.skip, chunk.length);
      this.skip -= skipped;
      chunk = chunk.subarray(skipped);
    }
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= FRAME_HEADER_BYTES) {
      const length = this.pending.readUIntBE(0, 3);
      const wireBytes = FRAME_HEADER_BYTES + length;
      if (this.pending.length < wireBytes) break;
      this.onFrame({
        type: this.pending.readUInt8(3),
        flags: this.pending.readUInt8(4),
        streamId: this.pending.readUInt32BE(5) & 0x7fffffff,
        payload: this.pending.subarray(FRAME_HEADER_BYTES, wireBytes),
        wireBytes,
      });
      this.pending = this.pending.subarray(wireBytes);
    }
  }
}

/** HEADERS and CONTINUATION frames carry a header block (HPACK); they are a request's or response's header bytes. */
export function isHeaderBlockFrame(type: number): boolean {
  return type === FRAME_TYPE.HEADERS || type === FRAME_TYPE.CONTINUATION;
}
