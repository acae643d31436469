import net from 'node:net';
import type { LabServerSpec } from '../server-spec.js';

export const refusedServer: LabServerSpec<'refused'> = {
  name: 'refused',
  offset: 20,
  scheme: 'http',
  description: 'a port the lab holds with nothing listening on it: every connection is refused (TCP RST to the SYN)',
  create: () => net.createServer((socket) => socket.on('error', () => {})),
  // The port stays the lab's without a listener: the server accepts one connection from the
  // lab itself, then stops listening. The accepted socket keeps the port bound, so the kernel
  // gives it to no one asking for a free port (another test's lab), and a SYN finds no listener.
  // The lab closes that socket when it stops, like any other.
  ready: (server) =>
    new Promise((resolve) => {
      server.once('connection', () => {
        server.close();
        resolve();
      });
      const { port, address } = server.address() as net.AddressInfo;
      net.connect(port, address).on('error', () => {});
    }),
};
