// The tls view (views/tls.ts) as terminal text.
import type { ResultOf } from '../../../contracts/result.js';
import { renderBlocksAsText } from '../document.js';
import { tlsView } from '../views/tls.js';

export const tlsSection = (results: ResultOf<'tls'>[]): string => renderBlocksAsText(tlsView(results).blocks);
