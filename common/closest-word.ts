// "Did you mean": the known word a misspelt one was meant to be, for bad-input messages.

/** Edits (insert, delete, substitute, swap two neighbours) from a to b: Damerau-Levenshtein, optimal string alignment. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate `word` was most likely meant to be: the nearest by edits, ignoring case, if it is
 * within a third of the word's length (at least one edit); undefined when none is that near.
 */
export function closestWord(word: string, candidates: readonly string[]): string | undefined {
  const wanted = word.toLowerCase();
  const allowed = Math.max(1, Math.floor(wanted.length / 3));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (distance <= allowed && (!best || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}
