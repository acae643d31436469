// The drain probe's JSON scanner against JSON.parse: the same verdict on every generated text
// (valid JSON, and JSON with a byte changed, cut or added), the same end, however the bytes are
// split into chunks; and a body of nested brackets is refused at Go's depth without building anything.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { JsonScanner, MAX_JSON_DEPTH } from '../../worker/http/json-scanner.js';
import { propertyParams } from '../helpers/property-runs.js';

/** Where the scanner says the top-level value ends (bytes), or null when it finds it no JSON value. */
function scan(bytes: Buffer, cuts: number[]): number | null {
  const scanner = new JsonScanner();
  let at = 0;
  for (const end of [...cuts.filter((c) => c < bytes.length).sort((a, b) => a - b), bytes.length]) {
    scanner.feed(bytes.subarray(at, end));
    at = end;
    if (scanner.done || scanner.problem) break;
  }
  return scanner.done && !scanner.problem ? scanner.consumed : null;
}

/** JSON.parse's verdict on the same question: the shortest prefix that is one object or array and parses. */
function parseEnd(bytes: Buffer): number | null {
  const text = bytes.toString('latin1');
  const start = text.search(/\S/);
  if (start < 0 || (text[start] !== '{' && text[start] !== '[')) return null;
  for (let end = start + 1; end <= text.length; end++) {
    if (text[end - 1] !== '}' && text[end - 1] !== ']') continue;
    try {
      JSON.parse(bytes.subarray(0, end).toString('utf8'));
      return end;
    } catch {}
  }
  return null;
}

const container = fc.oneof(fc.array(fc.jsonValue()), fc.dictionary(fc.string(), fc.jsonValue()));
const jsonText = fc.tuple(container, fc.boolean()).map(([v, pretty]) => JSON.stringify(v, null, pretty ? 2 : 0));
const mutated = fc
  .tuple(jsonText, fc.nat(), fc.constantFrom('delete', 'replace', 'insert'), fc.constantFrom(...'{}[],:"\\-+.eE0a \n'))
  .map(([text, at, how, c]) => {
    const i = text.length === 0 ? 0 : at % text.length;
    if (how === 'delete') return text.slice(0, i) + text.slice(i + 1);
    if (how === 'replace') return text.slice(0, i) + c + text.slice(i + 1);
    return text.slice(0, i) + c + text.slice(i);
  });
const cuts = fc.array(fc.nat({ max: 400 }), { maxLength: 6 });

test('valid JSON: the scanner ends where the value ends, whatever the chunks, and ignores what follows', () => {
  fc.assert(
    fc.property(jsonText, cuts, fc.constantFrom('', '\n', '\n{"next":1}', 'garbage'), (text, at, tail) => {
      const bytes = Buffer.from(text + tail);
      assert.equal(scan(bytes, at), Buffer.byteLength(text));
    }),
    propertyParams(),
  );
});

test('changed JSON: the scanner and JSON.parse agree on whether, and where, a value ends', () => {
  fc.assert(
    fc.property(mutated, cuts, (text, at) => {
      const bytes = Buffer.from(text);
      assert.equal(scan(bytes, at), parseEnd(bytes), JSON.stringify(text));
    }),
    propertyParams(),
  );
});

test('nesting is refused past Go decoder depth; 16 MB of brackets is one pass that keeps nothing', () => {
  const deep = (n: number) => Buffer.from('['.repeat(n) + ']'.repeat(n));
  assert.equal(scan(deep(MAX_JSON_DEPTH), []), 2 * MAX_JSON_DEPTH);
  const scanner = new JsonScanner();
  scanner.feed(deep(MAX_JSON_DEPTH + 1));
  assert.match(scanner.problem ?? '', /nested deeper than 10000 levels/);

  const heapBefore = process.memoryUsage().heapUsed;
  const wide = new JsonScanner();
  const chunk = Buffer.from('[],'.repeat(1 << 16));
  wide.feed(Buffer.from('['));
  for (let i = 0; i < 85; i++) wide.feed(chunk);
  wide.feed(Buffer.from('[]]'));
  assert.equal(wide.done, true);
  assert.equal(wide.problem, null);
  const grewBy = process.memoryUsage().heapUsed - heapBefore;
  assert.ok(grewBy < 16 << 20, `heap grew by ${grewBy} bytes over ${wide.consumed} bytes of JSON`);
});
