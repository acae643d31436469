import { labHttpsServer } from '../https-server.js';
import { LAB_CERT_HOSTS, type LabServerSpec } from '../server-spec.js';

export const selfSignedServer: LabServerSpec = {
  name: 'self-signed',
  offset: 8,
  scheme: 'https',
  description: 'HTTPS with a self-signed certificate (not from the lab CA)',
  create: async ({ ca }) => labHttpsServer(await ca.issue({ hosts: LAB_CERT_HOSTS, selfSigned: true })),
};
