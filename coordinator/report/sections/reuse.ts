// The reuse view (views/reuse.ts) as terminal text.
import type { ResultOf } from '../../../contracts/result.js';
import { renderBlocksAsText } from '../document.js';
import { reuseView } from '../views/reuse.js';

export const reuseSection = (results: ResultOf<'reuse'>[]): string => renderBlocksAsText(reuseView(results).blocks);
