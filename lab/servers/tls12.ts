import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

export const tls12Server: LabServerSpec<'tls12'> = {
  name: 'tls12',
  offset: 5,
  scheme: 'https',
  description: 'HTTPS that speaks TLS 1.2 only (refuses 1.3)',
  create: ({ serverCert }) => labHttpsServer(serverCert, { maxVersion: 'TLSv1.2' }),
};
