import http from 'node:http';
import { handleLabRequest } from '../routes.js';
import type { LabServerSpec } from '../server-spec.js';

export const closeServer: LabServerSpec<'close'> = {
  name: 'close',
  offset: 1,
  scheme: 'http',
  description: 'HTTP/1.1 that answers every request with Connection: close (like php -S)',
  create: () =>
    http.createServer((req, res) => {
      res.setHeader('connection', 'close');
      handleLabRequest(req, res);
    }),
};
