// The drain view (views/drain.ts) as terminal text.
import type { ResultOf } from '../../../contracts/result.js';
import { renderBlocksAsText } from '../document.js';
import { drainView } from '../views/drain.js';

export const drainSection = (results: ResultOf<'drain'>[]): string => renderBlocksAsText(drainView(results).blocks);
