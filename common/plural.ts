// Counts in words, for every message and report line: "1 job", "8 jobs", "1,000 jobs".

/** A count with its thousands grouped, as `toLocaleString('en-US')` writes it. Whole numbers are
 * grouped here: the first toLocaleString of a process loads ICU's number formats (~15 ms), a
 * twentieth of what a command that prints a count may take to start. */
export function thousands(n: number): string {
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return n.toLocaleString('en-US');
  return String(n).replace(/\B(?=(\d{3})+$)/g, ',');
}

/** "1 connection", "6 connections", "1,000 jobs". */
export function plural(n: number, word: string): string {
  return `${thousands(n)} ${word}${n === 1 ? '' : 's'}`;
}
