// Text from a target or a plan, made safe to show to a person. A certificate subject, a header
// a server sent or a plan's URL may hold ESC sequences (colours, cursor moves, a retitled
// window, OSC 8 links), a carriage return that overwrites the line, a line break that forges
// one, or a bidirectional override that reorders what is read: each is shown as an escape
// (`\x1b`, `\r`, `\u202e`) instead. Every renderer (terminal, Markdown, HTML, CSV), plan errors
// and log lines pass values through here, so the rule exists once.

/** C0 and C1 controls, DEL, and the invisible characters that move or reorder text (bidi controls, line separators). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** The same beyond what JSON escapes itself (C0): for lines that are JSON already (logs). */
const UNPRINTABLE_IN_JSON = /[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (c: string, digits: number) => c.charCodeAt(0).toString(16).padStart(digits, '0');

function escaped(c: string): string {
  return NAMED[c] ?? (c.charCodeAt(0) < 0x100 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`);
}

/** The text with every control and reordering character escaped: `"\x1b[31mred"` → `"\\x1b[31mred"`. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escaped);
}

/**
 * Every string in a value (keys too), printable; numbers, booleans and nulls as they are. Copies
 * only what changes: a run report is mostly numbers, and its strings are almost always clean.
 */
export function printableDeep<T>(value: T): T {
  if (typeof value === 'string') return printable(value) as T;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const shown = printableDeep(value[i]);
      if (shown === value[i]) continue;
      copy ??= [...value];
      copy[i] = shown;
    }
    return (copy ?? value) as T;
  }
  if (value && typeof value === 'object') {
    const source = value as Record<string, unknown>;
    const keys = Object.keys(source);
    let copy: Record<string, unknown> | undefined;
    for (let i = 0; i < keys.length; i++) {
      const key = printable(keys[i]);
      const item = printableDeep(source[keys[i]]);
      if (!copy && (key !== keys[i] || item !== source[keys[i]])) {
        copy = {};
        for (const earlier of keys.slice(0, i)) copy[earlier] = source[earlier];
      }
      if (copy) copy[key] = item;
    }
    return (copy ?? value) as T;
  }
  return value;
}

/** JSON (a log line, a report file) with what JSON leaves raw escaped as `\uXXXX`: the same data, safe bytes. */
export function printableJson(line: string): string {
  return line.replace(UNPRINTABLE_IN_JSON, (c) => `\\u${hex(c, 4)}`);
}

/** `JSON.stringify` for files and stdout: the same JSON, with no byte a terminal would act on. */
export function printableJsonText(value: unknown, indent?: number): string {
  return printableJson(JSON.stringify(value, null, indent));
}
