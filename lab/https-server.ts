// The lab's HTTPS servers differ only in their certificate and TLS settings: HTTP/1.1 with
// keep-alive, the lab routes, TLS 1.2 and 1.3 unless a server says otherwise.
import https from 'node:https';
import type { KeyAndCert } from './certs.js';
import { handleLabRequest } from './routes.js';

export function labHttpsServer(cert: KeyAndCert, tlsOptions: https.ServerOptions = {}): https.Server {
  return https.createServer(
    {
      key: cert.keyPem,
      cert: cert.certPem,
      minVersion: 'TLSv1.2',
      maxVersion: 'TLSv1.3',
      ALPNProtocols: ['http/1.1'],
      keepAliveTimeout: 60_000,
      ...tlsOptions,
    },
    handleLabRequest,
  );
}
