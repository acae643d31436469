// The lab DNS server's reading of queries (lab/dns-wire.ts) as a table: a query it answers, and
// every way a message is no query (each dropped, never a throw); then random bytes, which must
// never throw either. Real clients (c-ares, dig, dnsmasq) meet it in test/integration/dns-probe.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { prng } from '../../common/stats.js';
import { answerTo, DNS_TYPES, MAX_QUERY_BYTES, parseQuery, textData } from '../../lab/dns-wire.js';

/** A query as a client writes it: header, then the question (name labels, type, class), then `extra`. */
function query(
  options: {
    id?: number;
    flags?: number;
    questions?: number;
    labels?: (string | Buffer)[];
    type?: number;
    qclass?: number;
    extra?: Buffer;
  } = {},
): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(options.id ?? 0x1234, 0);
  header.writeUInt16BE(options.flags ?? 0x0100, 2);
  header.writeUInt16BE(options.questions ?? 1, 4);
  const name = Buffer.concat([
    ...(options.labels ?? ['WWW', 'lab', 'probefleet', 'test']).map((l) =>
      typeof l === 'string' ? Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]) : l,
    ),
    Buffer.from([0]),
  ]);
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(options.type ?? DNS_TYPES.A, 0);
  tail.writeUInt16BE(options.qclass ?? 1, 2);
  return Buffer.concat([header, name, tail, options.extra ?? Buffer.alloc(0)]);
}

test('a query: its id, RD, the name lower-cased, type, class, and the question as sent', () => {
  const parsed = parseQuery(query({ type: DNS_TYPES.AAAA }))!;
  assert.deepEqual(
    { id: parsed.id, rd: parsed.recursionDesired, name: parsed.name, type: parsed.type, qclass: parsed.qclass },
    { id: 0x1234, rd: true, name: 'www.lab.probefleet.test', type: 28, qclass: 1 },
  );
  assert.equal(parsed.question.subarray(1, 4).toString(), 'WWW', 'letter case kept for the answer');
  // An EDNS OPT record after the question (dig, c-ares and dnsmasq send one) is no problem.
  assert.ok(parseQuery(query({ extra: Buffer.from([0, 0, 41, 4, 208, 0, 0, 0, 0, 0, 0]) })));
});

const dropped: [string, Buffer][] = [
  ['nothing', Buffer.alloc(0)],
  ['a header alone', query().subarray(0, 12)],
  ['a response (QR set)', query({ flags: 0x8100 })],
  ['another opcode (a NOTIFY)', query({ flags: 4 << 11 })],
  ['no question', query({ questions: 0 })],
  ['two questions', query({ questions: 2 })],
  ['a compression pointer in the name', query({ labels: ['www', Buffer.from([0xc0, 12])] })],
  ['a label longer than 63', query({ labels: ['x'.repeat(64)] })],
  ['a name of more than 255 bytes', query({ labels: Array(5).fill('x'.repeat(60)) })],
  ['a label running past the end', Buffer.concat([query().subarray(0, 12), Buffer.from([40, 97, 98])])],
  ['a name without its end', Buffer.concat([query().subarray(0, 12), Buffer.from([3, 119, 119, 119])])],
  ['no type and class after the name', query().subarray(0, -3)],
  ['longer than any query', query({ extra: Buffer.alloc(MAX_QUERY_BYTES) })],
];
for (const [what, message] of dropped) {
  test(`dropped: ${what}`, () => assert.equal(parseQuery(message), undefined));
}

test('random bytes never throw, and a header of random bytes before a good question is read or dropped', () => {
  const random = prng(53);
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
  for (let i = 0; i < 5_000; i++) {
    assert.doesNotThrow(() => parseQuery(bytes(Math.floor(random() * 80))));
    assert.doesNotThrow(() => parseQuery(Buffer.concat([bytes(12), query().subarray(12)])));
  }
});

test('an answer: the id, QR AA and RD, the rcode, the question echoed, records pointing at its name', () => {
  const parsed = parseQuery(query({ id: 7, type: DNS_TYPES.TXT }))!;
  const answer = answerTo(parsed, 'NOERROR', [{ type: DNS_TYPES.TXT, ttl: 0, data: textData('3') }]);
  assert.equal(answer.readUInt16BE(0), 7);
  assert.equal(answer.readUInt16BE(2), 0x8000 | 0x0400 | 0x0100);
  assert.deepEqual([answer.readUInt16BE(4), answer.readUInt16BE(6)], [1, 1]);
  const question = answer.subarray(12, 12 + parsed.question.length);
  assert.deepEqual(question, parsed.question);
  const record = answer.subarray(12 + parsed.question.length);
  assert.deepEqual([...record], [0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 0, 0, 2, 1, 0x33]);
  assert.equal(answerTo(parsed, 'NXDOMAIN').readUInt16BE(2) & 0xf, 3);
});
