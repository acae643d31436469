// Where JSON.parse stopped: Node 20's messages give a position for some mistakes ("... in JSON at
// position 12") but not for others ("Unexpected token ']', ... is not valid JSON"), so a file's
// problem could not say its line. This scans the text as RFC 8259 JSON, without recursion (a file
// of a million "[" is a long loop, not a stack overflow), and returns the offset of the first
// character that cannot continue a JSON text.

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what a JSON string may not hold raw
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*"/y;
const LITERAL = /true|false|null/y;

/** The offset of the first character that is not valid JSON there; undefined when the text is JSON. */
export function jsonErrorOffset(text: string): number | undefined {
  let at = 0;
  /** What encloses the current position: `[` or `{`. */
  const open: string[] = [];
  const skip = () => {
    while (at < text.length && WHITESPACE.has(text[at])) at++;
  };
  const match = (pattern: RegExp) => {
    pattern.lastIndex = at;
    if (!pattern.test(text)) return false;
    at = pattern.lastIndex;
    return true;
  };
  // Expecting a value; after it, what may follow depends on what encloses it.
  for (;;) {
    skip();
    const c = text[at];
    if (c === '[' || c === '{') {
      open.push(c);
      at++;
      skip();
      if (text[at] === (c === '[' ? ']' : '}')) {
        open.pop();
        at++;
      } else {
        if (c === '{') {
          if (!match(STRING)) return at;
          skip();
          if (text[at] !== ':') return at;
          at++;
        }
        continue;
      }
    } else if (!(match(STRING) || match(NUMBER) || match(LITERAL))) return at;
    // A value ended: close what it ends, or go on to the next one.
    for (;;) {
      skip();
      const enclosing = open.at(-1);
      if (enclosing === undefined) return at < text.length ? at : undefined;
      const c2 = text[at];
      if (c2 === (enclosing === '[' ? ']' : '}')) {
        open.pop();
        at++;
        continue;
      }
      if (c2 !== ',') return at;
      at++;
      if (enclosing === '{') {
        skip();
        if (!match(STRING)) return at;
        skip();
        if (text[at] !== ':') return at;
        at++;
      }
      break;
    }
  }
}
