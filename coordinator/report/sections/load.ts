// The load view (views/load.ts) as terminal text.
import type { ResultOf } from '../../../contracts/result.js';
import { renderBlocksAsText } from '../document.js';
import { loadView } from '../views/load.js';

export const loadSection = (results: ResultOf<'load'>[]): string => renderBlocksAsText(loadView(results).blocks);
