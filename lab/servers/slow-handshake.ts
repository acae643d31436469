import net from 'node:net';
import { labHttpsServer } from '../https-server.js';
import type { LabServerSpec } from '../server-spec.js';

/** How long the server sits on a new connection before it answers the ClientHello. */
export const SLOW_HANDSHAKE_DELAY_MS = 800;

// Like a TLS terminator that is slow to answer (an overloaded proxy, a remote key store): the
// TCP connection is accepted at once, the handshake waits. The client's TLS phase shows it;
// the handshake-latency alert fires for it (test/integration/prometheus-dashboards.test.ts).
export const slowHandshakeServer: LabServerSpec<'slow-tls'> = {
  name: 'slow-tls',
  offset: 11,
  scheme: 'https',
  description: `HTTPS like https, but the TLS handshake waits ${SLOW_HANDSHAKE_DELAY_MS} ms after the TCP connection`,
  create: ({ serverCert }) => {
    const tlsServer = labHttpsServer(serverCert);
    return net.createServer((socket) => {
      // A client that gives up while waiting must not take the lab down.
      socket.on('error', () => {});
      const timer = setTimeout(() => {
        if (!socket.destroyed) tlsServer.emit('connection', socket);
      }, SLOW_HANDSHAKE_DELAY_MS);
      socket.once('close', () => clearTimeout(timer));
    });
  },
};
