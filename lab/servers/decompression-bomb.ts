import http from 'node:http';
import { once } from 'node:events';
import zlib from 'node:zlib';
import type { LabServerSpec } from '../server-spec.js';

/** What each bomb decodes to: 1 GiB of zeros. */
export const BOMB_DECODED_BYTES = 1 << 30;
const ZEROS = Buffer.alloc(1 << 20);

/** 1 MiB of zeros as one gzip member (~1 KB), 1024 times: ~1 MB that decodes to 1 GiB, made in milliseconds. */
function makeGzipBomb(): Buffer {
  return Buffer.concat(Array<Buffer>(BOMB_DECODED_BYTES / ZEROS.length).fill(zlib.gzipSync(ZEROS)));
}

/** 1 GiB of zeros in one brotli stream (~1 KB), about a second of CPU to make. */
async function makeBrotliBomb(): Promise<Buffer> {
  const encoder = zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
  const parts: Buffer[] = [];
  encoder.on('data', (part: Buffer) => parts.push(part));
  for (let made = 0; made < BOMB_DECODED_BYTES; made += ZEROS.length)
    if (!encoder.write(ZEROS)) await once(encoder, 'drain');
  encoder.end();
  await once(encoder, 'end');
  return Buffer.concat(parts);
}

export const decompressionBombServer: LabServerSpec<'decompression-bomb'> = {
  name: 'decompression-bomb',
  offset: 30,
  scheme: 'http',
  description:
    'answers with a decompression bomb: 1 GiB of zeros as ~1 KB of brotli to clients that accept br, as ~1 MB of gzip to any other',
  create: () => {
    // Made on the first request that wants each, then kept: a lab that is never asked pays nothing.
    let gzipBomb: Buffer | undefined;
    let brotliBomb: Promise<Buffer> | undefined;
    return http.createServer(async (req, res) => {
      const br = /\bbr\b/.test(req.headers['accept-encoding'] ?? '');
      if (br) brotliBomb ??= makeBrotliBomb();
      else gzipBomb ??= makeGzipBomb();
      const body = br ? await brotliBomb! : gzipBomb!;
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-encoding': br ? 'br' : 'gzip',
        'content-length': body.length,
        vary: 'Accept-Encoding',
      });
      res.end(body);
    });
  },
};
