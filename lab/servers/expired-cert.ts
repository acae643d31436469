import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

const DAY_MS = 86_400_000;

export const expiredCertServer: LabServerSpec<'expired'> = {
  name: 'expired',
  offset: 7,
  scheme: 'https',
  description: 'HTTPS with a lab-CA certificate that expired yesterday',
  create: async ({ ca, certHosts }) =>
    labHttpsServer(
      await ca.issue({
        hosts: certHosts,
        notBefore: new Date(Date.now() - 90 * DAY_MS),
        notAfter: new Date(Date.now() - DAY_MS),
      }),
    ),
};
