// Seeded mutations of valid plans, for the loader's generated-input test: structural ones on
// the YAML document (a key deleted, a value of another type) and textual ones on its bytes
// (garbage inserted, the file cut short, a line indented wrongly or repeated).
import { isMap, isPair, parseDocument, visit, type Document, type Pair, type YAMLMap } from 'yaml';

export type Random = () => number;

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];

/** Every key: value pair of the document, with the mapping that holds it (none once the YAML is broken). */
function pairsOf(doc: Document): { map: YAMLMap; pair: Pair }[] {
  const pairs: { map: YAMLMap; pair: Pair }[] = [];
  if (doc.errors.length > 0) return pairs;
  visit(doc, {
    Pair(_, pair, path) {
      const map = path.at(-1);
      if (isMap(map) && isPair(pair)) pairs.push({ map, pair });
    },
  });
  return pairs;
}

const ALIAS_PLACEHOLDER = 'probefleet-alias-placeholder';
/** Keys a mapping should not have: numbers, collections. */
const ODD_KEYS: unknown[] = [5, 1.5, true, null, ['a', 'b'], { a: 1 }];
/** Values of every YAML type, for a field that expects another. */
const OTHER_VALUES: unknown[] = [
  0,
  -1,
  1e21,
  2.5,
  '',
  'x',
  'http://',
  true,
  null,
  [],
  ['a', 1],
  {},
  { a: { b: [null] } },
];
/** What a hand-edited or damaged file may hold: YAML indicators, controls, NUL, a BOM, invalid UTF-8 (as it decodes). */
const GARBAGE = [
  ':',
  '-',
  '- ',
  '[',
  ']',
  '{',
  '}',
  '"',
  "'",
  '&a',
  '*a',
  '!!binary',
  '%YAML 1.1',
  '? ',
  '|',
  '>',
  '#',
  '\t',
  '\r',
  '\0',
  '\u001b[0m',
  '\uFEFF',
  '\u2028',
  '---',
  '...',
  '\n  ',
  '\uFFFD\uFFFD',
  '😀',
];

/** A change to one key: value pair of the parsed document; the text unchanged when there is none to change, or it cannot be written back. */
function onAPair(
  change: (pair: Pair, doc: Document, map: YAMLMap, random: Random) => void,
  after: (text: string) => string = (t) => t,
) {
  return (text: string, random: Random): string => {
    const doc = parseDocument(text);
    const pairs = pairsOf(doc);
    if (pairs.length === 0) return text;
    const { map, pair } = pick(random, pairs);
    change(pair, doc, map, random);
    try {
      return after(String(doc));
    } catch {
      return text; // an alias put in by an earlier mutation: the library will not write it
    }
  };
}

const MUTATIONS: Record<string, (text: string, random: Random) => string> = {
  'delete a key': onAPair((pair, _doc, map) => map.items.splice(map.items.indexOf(pair), 1)),
  "change a value's type": onAPair(
    (pair, doc, _map, random) => (pair.value = doc.createNode(pick(random, OTHER_VALUES))),
  ),
  'replace a key with an odd one': onAPair(
    (pair, doc, _map, random) => (pair.key = doc.createNode(pick(random, ODD_KEYS))),
  ),
  // The YAML library will not write an alias to an anchor that is never set: put it in as text.
  'replace a value with an alias': onAPair(
    (pair, doc) => (pair.value = doc.createNode(ALIAS_PLACEHOLDER)),
    (text) => text.replace(ALIAS_PLACEHOLDER, '*nowhere'),
  ),
  'insert garbage': (text, random) => {
    const at = Math.floor(random() * (text.length + 1));
    const bytes = Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(random, GARBAGE)).join('');
    return text.slice(0, at) + bytes + text.slice(at);
  },
  truncate: (text, random) => text.slice(0, Math.floor(random() * text.length)),
  'indent a line wrongly': (text, random) => {
    const lines = text.split('\n');
    const i = Math.floor(random() * lines.length);
    lines[i] = ' '.repeat(1 + Math.floor(random() * 5)) + lines[i];
    return lines.join('\n');
  },
  'repeat a line': (text, random) => {
    const lines = text.split('\n');
    const i = Math.floor(random() * lines.length);
    lines.splice(i, 0, lines[i]);
    return lines.join('\n');
  },
};

/** One to three mutations of `text`, and their names. */
export function mutatePlan(text: string, random: Random): { text: string; mutations: string[] } {
  const mutations: string[] = [];
  for (let n = 1 + Math.floor(random() * 3); n > 0; n--) {
    const name = pick(random, Object.keys(MUTATIONS));
    text = MUTATIONS[name](text, random);
    mutations.push(name);
  }
  return { text, mutations };
}
