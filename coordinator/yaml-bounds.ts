// Bounds on a YAML text checked on the parser's tokens, before the (recursive) composer and the
// converter to plain data see them: a plan, and a target file (coordinator/target-files.ts).
import type { CST } from 'yaml';

/**
 * The first list or mapping (by offset) nested deeper than `depthLimit` or holding more than
 * `itemLimit` items, walking the tokens without recursion: the schema reads neither, so a list of
 * 300,000 items is one problem here, not 300,000 from the schema (or its stack overflowing).
 */
export function firstTooBig(
  tokens: CST.Token[],
  depthLimit: number,
  itemLimit: number,
): { offset: number; problem: 'deep' | 'long' } | undefined {
  let first: { offset: number; problem: 'deep' | 'long' } | undefined;
  const found = (offset: number, problem: 'deep' | 'long') => {
    if (!first || offset < first.offset) first = { offset, problem };
  };
  const stack: [CST.Token | undefined, number][] = tokens.map((token) => [token, 0]);
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [token, depth] = next;
    if (!token) continue;
    const collection = token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection';
    const here = collection ? depth + 1 : depth;
    if (here > depthLimit) {
      found(token.offset, 'deep');
      continue;
    }
    if (collection && token.items.length > itemLimit) {
      found(token.offset, 'long');
      continue;
    }
    if (token.type === 'document') stack.push([token.value, here]);
    if (collection) for (const item of token.items) stack.push([item.key ?? undefined, here], [item.value, here]);
  }
  return first;
}
