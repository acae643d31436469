import { handWrittenServer } from '../route-helpers.js';
import type { LabServerSpec } from '../server-spec.js';

const FILLER_LINE = `X-Filler: ${'f'.repeat(1014)}\r\n`;
/** A well-formed head of 1 MiB of headers: 64 times what clients accept by default (16 KiB). */
const HUGE_HEAD = Buffer.from(`HTTP/1.1 200 OK\r\n${FILLER_LINE.repeat(1024)}Content-Length: 0\r\n\r\n`);

export const hugeHeadersServer: LabServerSpec<'huge-headers'> = {
  name: 'huge-headers',
  offset: 26,
  scheme: 'http',
  description: 'answers every request with a 1 MiB response head (1,024 headers of 1 KiB)',
  create: () => handWrittenServer((socket) => socket.end(HUGE_HEAD)),
};
