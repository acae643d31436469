import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

const DAY_MS = 86_400_000;

/**
 * Terminal escape sequences a hostile certificate may carry in its names: clear the screen, red
 * text, retitle the window (OSC 0), a hidden link (OSC 8, ended by BEL), a carriage return that
 * overwrites the line, and a right-to-left override that reorders what follows it.
 */
export const ESCAPE_CERT_SUBJECT = {
  CN: '\x1b[2J\x1b[31mEVIL\x1b[0m\r',
  O: '\x1b]0;pwned\x07\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07\u202etxt.exe',
};

export const escapeCertServer: LabServerSpec = {
  name: 'escape-cert',
  offset: 41,
  scheme: 'https',
  description:
    'HTTPS with a self-signed certificate whose subject and issuer hold terminal escape sequences; it expires in 5 days',
  create: async ({ ca, certHosts }) =>
    labHttpsServer(
      await ca.issue({
        hosts: certHosts,
        subject: ESCAPE_CERT_SUBJECT,
        selfSigned: true,
        notAfter: new Date(Date.now() + 5 * DAY_MS),
      }),
    ),
};
