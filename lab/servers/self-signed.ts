import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

export const selfSignedServer: LabServerSpec<'self-signed'> = {
  name: 'self-signed',
  offset: 8,
  scheme: 'https',
  description: 'HTTPS with a self-signed certificate (not from the lab CA)',
  create: async ({ ca, certHosts }) => labHttpsServer(await ca.issue({ hosts: certHosts, selfSigned: true })),
};
