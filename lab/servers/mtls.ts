import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

// Requires a client certificate the lab CA signed (the lab's own: Lab.clientCertFile and
// clientKeyFile): without one, TLS 1.3 ends with the certificate_required alert, TLS 1.2 with
// handshake_failure, as Node, Go and Envoy refuse.
export const mtlsServer: LabServerSpec<'mtls'> = {
  name: 'mtls',
  offset: 12,
  scheme: 'https',
  description: 'HTTPS that requires a client certificate signed by the lab CA (mutual TLS)',
  create: ({ serverCert, ca }) =>
    labHttpsServer(serverCert, { requestCert: true, rejectUnauthorized: true, ca: ca.certPem }),
};
