// Items grouped by a key, as Map.groupBy does (Node 21+; the runtime here is Node 20).

/** The items by key, each group in the order given, the keys in order of first appearance. */
export function groupBy<T, K>(items: Iterable<T>, keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
