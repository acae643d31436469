import net from 'node:net';
import type { LabServerSpec } from '../server-spec.js';

const HEAD_END = '\r\n\r\n';
/** Heads kept for GET /seen, newest last. */
const KEPT = 500;

/**
 * Reads request heads by hand, so what it records is what arrived, byte for byte, before any HTTP
 * parser could split, merge or refuse a line: an injected `X-Injected: yes` line, a bare LF or a
 * NUL all show; a request's body (by its Content-Length) is passed over. Answers each head with
 * itself as JSON ({"head": ...}); GET /seen answers the
 * newest 500 heads it answered (a JSON list), keep-alive unless the request said close.
 */
function echoHeadsServer(): net.Server {
  const heads: string[] = [];
  return net.createServer((socket) => {
    socket.on('error', () => {});
    let pending = '';
    /** Bytes of a request body (its Content-Length) still to pass over: a body is not a head. */
    let bodyLeft = 0;
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      const skipBody = () => {
        const skipped = Math.min(bodyLeft, pending.length);
        pending = pending.slice(skipped);
        bodyLeft -= skipped;
        return bodyLeft === 0;
      };
      for (
        let end = skipBody() ? pending.indexOf(HEAD_END) : -1;
        end !== -1;
        end = skipBody() ? pending.indexOf(HEAD_END) : -1
      ) {
        const head = pending.slice(0, end + HEAD_END.length);
        pending = pending.slice(end + HEAD_END.length);
        bodyLeft = Number(/\r\ncontent-length:[ \t]*(\d+)/i.exec(head)?.[1] ?? 0);
        const listing = head.startsWith('GET /seen ');
        if (!listing && heads.push(head) > KEPT) heads.shift();
        const body = Buffer.from(JSON.stringify(listing ? heads : { head }));
        const close = /\r\nconnection:[ \t]*close/i.test(head);
        socket.write(
          `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`,
        );
        if (!head.startsWith('HEAD ')) socket.write(body);
        if (close) return void socket.end();
      }
      if (pending.length > 64 * 1024) socket.destroy(); // not HTTP/1.1 (an HTTP/2 preface's frames)
    });
  });
}

export const echoHeadersServer: LabServerSpec = {
  name: 'echo-headers',
  offset: 40,
  scheme: 'http',
  description: 'answers every request with its head as it arrived (JSON); GET /seen lists the newest 500 heads',
  create: echoHeadsServer,
};
