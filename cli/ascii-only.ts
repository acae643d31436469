// The last change cli/build-bundle.ts makes to the bundle it writes.

/**
 * A bundle's source with every character outside ASCII written as an escape. esbuild escapes them
 * in code (its default `charset: 'ascii'`) but copies comments as they are, and one "—" in a
 * comment makes the whole 3 MB source a two-byte string: decoded from UTF-8 and held at twice the
 * size at every start. Only comments are left to change, so the escapes change no code; a line of
 * code that still has one is an error naming it.
 */
export function asciiOnly(source: string): string {
  const outsideAscii = /[\u{80}-\u{10ffff}]/u;
  for (const [i, line] of source.split('\n').entries())
    if (outsideAscii.test(line) && !/^\s*(\/\/|\/\*|\*)/.test(line))
      throw new Error(`the bundle's line ${i + 1} has a character outside ASCII, and is not a comment: ${line.trim()}`);
  return source.replace(new RegExp(outsideAscii.source, 'gu'), (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}
