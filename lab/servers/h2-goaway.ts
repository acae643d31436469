import http2 from 'node:http2';
import type { KeyAndCert } from '../certs.js';
import type { LabServerSpec } from '../server-spec.js';
import { handleLabH2Request } from './h2.js';

/** What an interrupted HTTP/2 response gets before the interruption. */
const PARTIAL_BODY = 'the first part of a response that never ends\n';

/**
 * Like the `h2` server, but every HTTP/2 request gets its headers and part of its body, then
 * `interrupt` (HTTP/1.1 requests are answered normally, so only the HTTP/2 side is broken).
 */
export function interruptingH2Server(
  cert: KeyAndCert,
  interrupt: (stream: http2.ServerHttp2Stream) => void,
): http2.Http2SecureServer {
  return http2.createSecureServer(
    { key: cert.keyPem, cert: cert.certPem, minVersion: 'TLSv1.2', allowHTTP1: true },
    (req, res) => {
      if (req.httpVersionMajor !== 2) return handleLabH2Request(req, res);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write(PARTIAL_BODY, () => interrupt(req.stream));
    },
  );
}

export const h2GoawayServer: LabServerSpec<'h2-goaway'> = {
  name: 'h2-goaway',
  offset: 28,
  scheme: 'https',
  description: 'HTTPS with ALPN h2: every HTTP/2 response stops after part of its body with GOAWAY (INTERNAL_ERROR)',
  // A client that reads GOAWAY with an error code closes the connection; destroying the session
  // here instead can drop the frame before it is sent (the client then sees only a closed socket).
  create: ({ serverCert }) =>
    interruptingH2Server(serverCert, (stream) =>
      stream.session?.goaway(http2.constants.NGHTTP2_INTERNAL_ERROR, stream.id),
    ),
};
