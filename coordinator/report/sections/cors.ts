// The cors view (views/cors.ts) as terminal text.
import type { ResultOf } from '../../../contracts/result.js';
import { renderBlocksAsText } from '../document.js';
import { corsView } from '../views/cors.js';

export const corsSection = (results: ResultOf<'cors'>[]): string => renderBlocksAsText(corsView(results).blocks);
