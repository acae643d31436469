import http from 'node:http';
import { Readable, pipeline } from 'node:stream';
import type { LabServerSpec } from '../server-spec.js';

export const HUGE_BODY_BYTES = 1 << 30;
const CHUNK = Buffer.alloc(64 << 10, 'probefleet ');

/** The body made as it is sent, one shared chunk at a time: the lab never holds a gigabyte. */
function* hugeBody(): Generator<Buffer> {
  for (let sent = 0; sent < HUGE_BODY_BYTES; sent += CHUNK.length) yield CHUNK;
}

export const hugeBodyServer: LabServerSpec<'huge-body'> = {
  name: 'huge-body',
  offset: 24,
  scheme: 'http',
  description: 'HTTP/1.1 that answers every request with a 1 GiB body (Content-Length), generated as it is sent',
  create: () =>
    http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': HUGE_BODY_BYTES });
      // A client that stops reading ends the pipeline with an error; nothing to do about it.
      pipeline(Readable.from(hugeBody()), res, () => {});
    }),
};
