import http2 from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { handleLabRequest } from '../routes.js';
import type { LabServerSpec } from '../server-spec.js';

/** The lab routes on HTTP/2's compatibility API, which has everything they use (writeHead, flushHeaders, end). */
export function handleLabH2Request(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void {
  handleLabRequest(req as unknown as IncomingMessage, res as unknown as ServerResponse);
}

export const h2Server: LabServerSpec<'h2'> = {
  name: 'h2',
  offset: 3,
  scheme: 'https',
  description: 'HTTPS with ALPN h2 and http/1.1 (HTTP/2, and HTTP/1.1 for clients that ask), TLS 1.2 and 1.3',
  create: ({ serverCert }) =>
    http2.createSecureServer(
      {
        key: serverCert.keyPem,
        cert: serverCert.certPem,
        minVersion: 'TLSv1.2',
        maxVersion: 'TLSv1.3',
        allowHTTP1: true,
      },
      handleLabH2Request,
    ),
};
