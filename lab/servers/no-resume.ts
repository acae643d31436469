import { constants } from 'node:crypto';
import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

export const noResumeServer: LabServerSpec<'no-resume'> = {
  name: 'no-resume',
  offset: 10,
  scheme: 'https',
  description: 'HTTPS that never resumes a TLS session (no tickets, no session cache)',
  // Without tickets OpenSSL falls back to its session cache, which Node servers leave off.
  create: ({ serverCert }) => labHttpsServer(serverCert, { secureOptions: constants.SSL_OP_NO_TICKET }),
};
