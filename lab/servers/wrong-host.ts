import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

/** A name no lab URL uses (.invalid is reserved, RFC 2606). */
export const WRONG_HOST_NAME = 'wrong-host.probefleet.invalid';

export const wrongHostServer: LabServerSpec<'wrong-host'> = {
  name: 'wrong-host',
  offset: 9,
  scheme: 'https',
  description: `HTTPS with a lab-CA certificate for another name (${WRONG_HOST_NAME})`,
  create: async ({ ca }) => labHttpsServer(await ca.issue({ hosts: [WRONG_HOST_NAME] })),
};
