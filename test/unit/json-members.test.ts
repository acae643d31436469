// The run file's splitter against JSON.parse: for any document with a top-level array (any
// values, strings with quotes, backslashes and brackets, any indentation, cut into chunks
// anywhere), the elements it yields parse to the array's elements and the rest to the document
// with the array empty; what is not a whole document is refused, not read in part.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { JsonMembersError, type JsonMember, topLevelArrayMembers } from '../../coordinator/report/json-members.js';
import { propertyParams } from '../helpers/property-runs.js';

async function* chunksOf(text: string, cuts: number[]): AsyncGenerator<string> {
  let at = 0;
  for (const end of [...cuts.filter((c) => c < text.length).sort((a, b) => a - b), text.length]) {
    yield text.slice(at, end);
    at = end;
  }
}

async function split(text: string, cuts: number[] = []): Promise<{ elements: unknown[]; rest: unknown }> {
  const members: JsonMember[] = [];
  for await (const member of topLevelArrayMembers(chunksOf(text, cuts), 'results')) members.push(member);
  const rest = members.pop();
  assert.ok(rest && 'rest' in rest, 'the rest comes last');
  return {
    elements: members.map((m) => ('element' in m ? JSON.parse(m.element) : assert.fail('an element'))),
    rest: JSON.parse(rest.rest),
  };
}

// Keys that look like the array's, and strings full of what the splitter counts.
const tricky = fc.constantFrom('results', '"results"', '[', ']', '{', '}', ',', ':', '\\', '"', '\\"', 'é', '\u2028');
const text = fc.oneof(
  fc.string(),
  fc.array(tricky).map((parts) => parts.join('')),
);
const value = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    text,
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(text, tie('value'), { maxKeys: 4 }),
  ),
})).value;

test('the elements and the rest parse to what JSON.parse makes of the document, however it is cut and indented', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.dictionary(
        text.filter((k) => k !== 'results'),
        value,
        { maxKeys: 4 },
      ),
      fc.array(value, { maxLength: 6 }),
      fc.dictionary(
        text.filter((k) => k !== 'results'),
        value,
        { maxKeys: 3 },
      ),
      fc.constantFrom(undefined, 0, 2, '\t'),
      fc.array(fc.nat(2000), { maxLength: 8 }),
      async (before, results, after, indent, cuts) => {
        const document = { ...before, results, ...after };
        const written = JSON.stringify(document, null, indent);
        const { elements, rest } = await split(written, cuts);
        assert.deepEqual(elements, JSON.parse(JSON.stringify(results)));
        assert.deepEqual(rest, JSON.parse(JSON.stringify({ ...document, results: [] })));
      },
    ),
    propertyParams(),
  );
});

test('an array of the same name deeper down is not the one split; a document without it is all rest', async () => {
  const document = { plan: { results: [1, 2] }, other: [{ results: [3] }] };
  assert.deepEqual(await split(JSON.stringify(document)), { elements: [], rest: document });
  assert.deepEqual(await split('{"results": 5, "b": [1, 2]}'), { elements: [], rest: { results: 5, b: [1, 2] } });
});

test('what is not one whole document is refused', async () => {
  await assert.rejects(split('{"results": [1, 2'), JsonMembersError);
  await assert.rejects(split('{"results": [1, 2]}}'), /an unmatched "}"/);
  await assert.rejects(split('{"results": [1], "x": 2, "results": [3]}'), /"results" is there twice/);
  await assert.rejects(split('{"a": "unterminated'), /ends before its last value does/);
  // An element left empty is handed on as it is, for JSON.parse to refuse.
  await assert.rejects(split('{"results": [1,]}'), SyntaxError);
});
