import http2 from 'node:http2';
import type { LabServerSpec } from '../server-spec.js';
import { interruptingH2Server } from './h2-goaway.js';

export const h2RstServer: LabServerSpec<'h2-rst'> = {
  name: 'h2-rst',
  offset: 29,
  scheme: 'https',
  description:
    'HTTPS with ALPN h2: every HTTP/2 response stops after part of its body with RST_STREAM (INTERNAL_ERROR); the connection stays up',
  create: ({ serverCert }) =>
    interruptingH2Server(serverCert, (stream) => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR)),
};
