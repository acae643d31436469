// What a target or a plan sends is shown with control characters escaped (common/printable.ts):
// the function itself, the terminal table, plan errors and log lines. The renderers of a whole
// run are met with a hostile certificate in test/integration/hostile-input.test.ts.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { printable, printableDeep, printableJson } from '../../common/printable.js';
import { formatProblem } from '../../coordinator/plan-loader.js';
import { renderTable } from '../../coordinator/report/table.js';

/** Every character a terminal could act on, or that reorders or breaks a line. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('printable', () => {
  const cases: [string, string][] = [
    [
      'plain words, 1.5 ms, caf\u00e9, \u00fcber, \u65e5\u672c',
      'plain words, 1.5 ms, caf\u00e9, \u00fcber, \u65e5\u672c',
    ],
    ['\x1b[2J\x1b[31mred\x1b[0m', '\\x1b[2J\\x1b[31mred\\x1b[0m'],
    ['\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07', '\\x1b]8;;https://evil.example/\\x07click\\x1b]8;;\\x07'],
    ['ok\rFAKE', 'ok\\rFAKE'],
    ['one\ntwo\tthree', 'one\\ntwo\\tthree'],
    ['nul\x00 del\x7f csi\x9b', 'nul\\x00 del\\x7f csi\\x9b'],
    ['\u202etxt.exe \u2066x\u2069 line\u2028sep', '\\u202etxt.exe \\u2066x\\u2069 line\\u2028sep'],
  ];
  for (const [input, expected] of cases) {
    test(JSON.stringify(input), () => {
      assert.equal(printable(input), expected);
      assert.ok(!UNSAFE.test(printable(input)));
      assert.equal(printable(printable(input)), expected, 'escaping twice changes nothing');
    });
  }

  test('a whole value: strings and keys escaped, numbers and nesting kept; a clean value is not copied', () => {
    const value = { z: 1, 'k\x1b': ['a\r', 1, null, { b: true, c: '\u202e' }], clean: { d: 'x' } };
    const shown = printableDeep(value);
    assert.deepEqual(shown, { z: 1, 'k\\x1b': ['a\\r', 1, null, { b: true, c: '\\u202e' }], clean: { d: 'x' } });
    assert.deepEqual(Object.keys(shown), ['z', 'k\\x1b', 'clean'], 'keys keep their order');
    assert.equal(shown.clean, value.clean);
    assert.equal(value['k\x1b'][0], 'a\r', 'the original is left as it was');
  });

  test('terminal tables show cells escaped, so a value cannot break the layout or drive the terminal', () => {
    const table = renderTable(['name', 'value'], [['ok', '\x1b[31mred\r\nnext']], 'll');
    assert.ok(!UNSAFE.test(table.replace(/\n/g, '')), table);
    assert.equal(table.split('\n').length, 3);
    assert.match(table, /\\x1b\[31mred\\r\\nnext/);
  });

  test('plan errors quote values escaped', () => {
    const line = formatProblem({
      file: 'plan.yaml',
      line: 3,
      column: 5,
      field: 'targets[0].url',
      message: 'not a valid URL: "http://\x1b[2Jx"',
    });
    assert.equal(line, 'plan.yaml:3:5: targets[0].url: not a valid URL: "http://\\x1b[2Jx"');
  });

  test('log lines stay JSON, with what JSON leaves raw (C1, bidi overrides) escaped', () => {
    let text = '';
    const sink = new Writable({
      write: (chunk, _encoding, done) => {
        text += String(chunk);
        done();
      },
    });
    const value = 'esc\x1b csi\x9b rlo\u202e';
    createLogger('test', 'info', sink).info({ answer: value }, 'server said \x1b[31m');
    assert.ok(!UNSAFE.test(text.trimEnd()), JSON.stringify(text));
    const entry = JSON.parse(text);
    assert.equal(entry.answer, value, 'the same value, once parsed');
    assert.equal(entry.msg, 'server said \x1b[31m');
    assert.equal(printableJson('{"a":"\u0085"}'), '{"a":"\\u0085"}');
  });
});
