// The compression view (views/compression.ts) as terminal text.
import type { ResultOf } from '../../../contracts/result.js';
import { renderBlocksAsText } from '../document.js';
import { compressionView } from '../views/compression.js';

export const compressionSection = (results: ResultOf<'compression'>[]): string =>
  renderBlocksAsText(compressionView(results).blocks);
