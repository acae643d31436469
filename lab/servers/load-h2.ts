import http2 from 'node:http2';
import { handleLabRequest } from '../routes.js';
import type { LabServerSpec } from '../server-spec.js';

/** node:http2's compatibility API has the request/response methods the lab routes use. */
const handleH2Request = handleLabRequest as unknown as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void;

export const loadH2Server: LabServerSpec = {
  name: 'load-h2',
  offset: 29,
  scheme: 'https',
  description: 'HTTP/2 over TLS (ALPN h2, http/1.1 too), up to 1000 concurrent streams per connection',
  create: ({ serverCert }) =>
    http2.createSecureServer(
      { key: serverCert.keyPem, cert: serverCert.certPem, allowHTTP1: true, settings: { maxConcurrentStreams: 1000 } },
      handleH2Request,
    ),
};
