import http from 'node:http';
import tls from 'node:tls';
import { handleLabRequest } from '../routes.js';
import type { LabServerSpec } from '../server-spec.js';

export const noAlpnServer: LabServerSpec<'no-alpn'> = {
  name: 'no-alpn',
  offset: 6,
  scheme: 'https',
  description: 'HTTPS that answers no ALPN at all (HTTP/1.1 inside; an HTTP/2 client that does not check hangs)',
  // https.createServer always offers ALPN http/1.1; a bare TLS server in front of an HTTP
  // server offers none.
  create: ({ serverCert }) => {
    const http1 = http.createServer({ keepAliveTimeout: 60_000 }, handleLabRequest);
    return tls.createServer({ key: serverCert.keyPem, cert: serverCert.certPem, minVersion: 'TLSv1.2' }, (socket) =>
      http1.emit('connection', socket),
    );
  },
};
