import { handWrittenServer } from '../route-helpers.js';
import type { LabServerSpec } from '../server-spec.js';

export const badStatusServer: LabServerSpec<'bad-status'> = {
  name: 'bad-status',
  offset: 25,
  scheme: 'http',
  description: 'answers every request with a malformed status line ("HTTP/1.1 2OO OK", letters for digits)',
  create: () => handWrittenServer((socket) => socket.end('HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n')),
};
