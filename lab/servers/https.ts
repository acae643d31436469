import https from 'node:https';
import { handleLabRequest } from '../routes.js';
import type { LabServerSpec } from '../server-spec.js';

export const httpsServer: LabServerSpec = {
  name: 'https',
  offset: 2,
  scheme: 'https',
  description: 'HTTPS, HTTP/1.1 keep-alive, TLS 1.2 and 1.3, certificate from the lab CA',
  create: ({ serverCert }) =>
    https.createServer(
      {
        key: serverCert.keyPem,
        cert: serverCert.certPem,
        minVersion: 'TLSv1.2',
        maxVersion: 'TLSv1.3',
        ALPNProtocols: ['http/1.1'],
        keepAliveTimeout: 60_000,
      },
      handleLabRequest,
    ),
};
