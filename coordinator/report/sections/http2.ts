// The http2 view (views/http2.ts) as terminal text.
import type { ResultOf } from '../../../contracts/result.js';
import { renderBlocksAsText } from '../document.js';
import { http2View } from '../views/http2.js';

export const http2Section = (results: ResultOf<'http2'>[]): string => renderBlocksAsText(http2View(results).blocks);
