import { handWrittenServer } from '../route-helpers.js';
import type { LabServerSpec } from '../server-spec.js';

export const tlsResetServer: LabServerSpec<'tls-reset'> = {
  name: 'tls-reset',
  offset: 27,
  scheme: 'https',
  description: 'accepts the TCP connection, reads the TLS ClientHello and resets the connection (no TLS alert)',
  create: () => handWrittenServer((socket) => socket.resetAndDestroy()),
};
