// /assets/*: bodies served with gzip, br (and zstd where the runtime has it) at a level the
// URL chooses, honouring Accept-Encoding and sending Vary: Accept-Encoding. The query string
// picks the server's behaviour, so one lab shows both the right and the wrong configurations:
//   policy=sensible (default) compresses text of 1 KB or more only; always: everything
//          (tiny and incompressible bodies too); never: nothing
//   gzip=1..9 (6), br=0..11 (5), zstd=1..22 (3): the level of each coding
//   vary=0: leave out Vary: Accept-Encoding
// Compression runs on every request, like a server compressing on the fly.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  CODING_LEVELS,
  codingUnavailable,
  compress,
  CONTENT_CODINGS,
  type ContentCoding,
} from '../common/content-coding.js';
import { productsJson, randomBytes, TINY_JSON } from './content.js';
import { intParam, sendText } from './route-helpers.js';

interface Asset {
  type: string;
  body: Buffer;
}

let assets: Record<string, Asset> | undefined;

/** Generated on first use: the products JSON takes a few milliseconds to build. */
function assetsByPath(): Record<string, Asset> {
  assets ??= {
    '/assets/products.json': { type: 'application/json', body: productsJson() },
    '/assets/tiny.json': { type: 'application/json', body: TINY_JSON },
    '/assets/random.bin': { type: 'application/octet-stream', body: randomBytes() },
  };
  return assets;
}

export const ASSET_PATHS = ['/assets/products.json', '/assets/tiny.json', '/assets/random.bin'];

/** The smallest body a sensible server compresses (nginx's gzip_min_length is often set to this). */
const MIN_COMPRESS_BYTES = 1024;
/** Which coding the server picks when the client accepts several equally. */
const SERVER_PREFERENCE: ContentCoding[] = ['br', 'zstd', 'gzip'];
const COMPRESSIBLE_TYPE = /^(text\/|application\/(json|javascript|xml)|image\/svg\+xml)/;

/** Codings the client accepts with q > 0, best first (ties keep the server's order: br, zstd, gzip). */
export function acceptedCodings(header: string | undefined, offered: readonly ContentCoding[]): ContentCoding[] {
  const q = new Map<string, number>();
  for (const part of (header ?? '').split(',')) {
    const [name, ...attrs] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const qAttr = attrs.map((a) => a.trim()).find((a) => a.startsWith('q='));
    q.set(name, qAttr ? Number(qAttr.slice(2)) || 0 : 1);
  }
  const weight = (c: string) => q.get(c) ?? q.get('*') ?? 0;
  return offered.filter((c) => weight(c) > 0).sort((a, b) => weight(b) - weight(a));
}

export function serveAsset(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://lab');
  const asset = assetsByPath()[url.pathname];
  const policy = url.searchParams.get('policy') ?? 'sensible';
  if (!['sensible', 'always', 'never'].includes(policy))
    return sendText(res, 400, `policy must be sensible, always or never, got "${policy}"`);

  const available = CONTENT_CODINGS.filter((c) => !codingUnavailable(c));
  const levels = new Map<ContentCoding, number>();
  for (const coding of available) {
    const { min, max, default: fallback } = CODING_LEVELS[coding];
    const level = intParam(url.searchParams, coding, fallback, min, max);
    if (typeof level === 'string') return sendText(res, 400, level);
    levels.set(coding, level);
  }

  const worthIt = asset.body.length >= MIN_COMPRESS_BYTES && COMPRESSIBLE_TYPE.test(asset.type);
  const compresses = policy === 'always' || (policy === 'sensible' && worthIt);
  const headers: Record<string, string | number> = { 'content-type': asset.type };
  // The answer depends on Accept-Encoding exactly when the server may compress it.
  if (compresses && url.searchParams.get('vary') !== '0') headers.vary = 'Accept-Encoding';
  const coding = compresses
    ? acceptedCodings(
        req.headers['accept-encoding'],
        SERVER_PREFERENCE.filter((c) => available.includes(c)),
      )[0]
    : undefined;
  const body = coding ? compress(coding, asset.body, levels.get(coding)!) : asset.body;
  if (coding) headers['content-encoding'] = coding;
  headers['content-length'] = body.length;
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}
