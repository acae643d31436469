import http from 'node:http';
import { handleLabRequest } from '../routes.js';
import type { LabServerSpec } from '../server-spec.js';

export const keepaliveServer: LabServerSpec<'keepalive'> = {
  name: 'keepalive',
  offset: 0,
  scheme: 'http',
  description: 'HTTP/1.1 with keep-alive (idle connections kept 60 s)',
  create: () => http.createServer({ keepAliveTimeout: 60_000 }, handleLabRequest),
};
