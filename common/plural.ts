// Counts in words, for every message and report line: "1 job", "8 jobs".

/** "1 connection", "6 connections", "1,000 jobs". */
export function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}
