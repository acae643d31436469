import { handWrittenServer } from '../route-helpers.js';
import type { LabServerSpec } from '../server-spec.js';

/** A reset while the write is still in flight goes out as a FIN on Node 20: wait until it was
 * handed to the kernel, and a little more (a fixed wait alone is not always enough on a loaded machine). */
const RESET_AFTER_MS = 20;

export const resetHeadersServer: LabServerSpec<'reset-headers'> = {
  name: 'reset-headers',
  offset: 21,
  scheme: 'http',
  description: `HTTP/1.1 that sends half a response head, then ${RESET_AFTER_MS} ms later resets the connection (TCP RST)`,
  create: () =>
    handWrittenServer((socket) => {
      let timer: NodeJS.Timeout | undefined;
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Le', () => {
        timer = setTimeout(() => socket.resetAndDestroy(), RESET_AFTER_MS);
      });
      socket.once('close', () => clearTimeout(timer));
    }),
};
