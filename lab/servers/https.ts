import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

export const httpsServer: LabServerSpec<'https'> = {
  name: 'https',
  offset: 2,
  scheme: 'https',
  description: 'HTTPS, HTTP/1.1 keep-alive (ALPN http/1.1 only), TLS 1.2 and 1.3, certificate from the lab CA',
  create: ({ serverCert }) => labHttpsServer(serverCert),
};
