// DNS messages as the lab's DNS server reads and writes them (RFC 1035, section 4): a query's one
// question in, an answer out. Whatever a client sends is read with bounds on every length and
// offset; a message that is no query (too short or long, a response, several questions, a
// compressed or overlong name) is undefined, and the server drops it.

/** The longest query read: a question with EDNS fits in a few hundred bytes. */
export const MAX_QUERY_BYTES = 1232;
const HEADER_BYTES = 12;
const MAX_NAME_BYTES = 255;

export const DNS_TYPES = { A: 1, AAAA: 28, TXT: 16 } as const;
const CLASS_IN = 1;

export const RCODES = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
export type Rcode = keyof typeof RCODES;

export interface DnsQuery {
  id: number;
  /** The client asked for recursion (RD): echoed in the answer, as servers do. */
  recursionDesired: boolean;
  /** Lower-cased, without the final dot. */
  name: string;
  type: number;
  qclass: number;
  /** The question's bytes as sent (name, type, class): echoed in the answer, letter case kept. */
  question: Buffer;
}

/** The query in `message`, or undefined when it is not one this server answers. */
export function parseQuery(message: Buffer): DnsQuery | undefined {
  if (message.length < HEADER_BYTES + 5 || message.length > MAX_QUERY_BYTES) return undefined;
  const flags = message.readUInt16BE(2);
  const isResponse = (flags & 0x8000) !== 0;
  const opcode = (flags >> 11) & 0xf;
  if (isResponse || opcode !== 0 || message.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let offset = HEADER_BYTES;
  for (;;) {
    if (offset >= message.length) return undefined;
    const length = message[offset];
    offset += 1;
    if (length === 0) break;
    // 0xc0: a compression pointer, which has no place in a query's only name; 0x40, 0x80: reserved.
    if (length > 63 || offset + length > message.length) return undefined;
    labels.push(message.toString('latin1', offset, offset + length));
    offset += length;
    if (offset - HEADER_BYTES > MAX_NAME_BYTES) return undefined;
  }
  if (offset + 4 > message.length) return undefined;
  return {
    id: message.readUInt16BE(0),
    recursionDesired: (flags & 0x0100) !== 0,
    name: labels.join('.').toLowerCase(),
    type: message.readUInt16BE(offset),
    qclass: message.readUInt16BE(offset + 2),
    question: message.subarray(HEADER_BYTES, offset + 4),
  };
}

export const isInternetClass = (query: DnsQuery) => query.qclass === CLASS_IN;

export interface DnsRecord {
  type: number;
  ttl: number;
  /** The record's data: 4 bytes for A, 16 for AAAA, length-prefixed strings for TXT. */
  data: Buffer;
}

/** The answer to `query`: authoritative, with `records` for its name (a pointer to the question's). */
export function answerTo(query: DnsQuery, rcode: Rcode, records: readonly DnsRecord[] = []): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt16BE(query.id, 0);
  // QR (a response), AA (authoritative), RD echoed; RA off: the lab recurses for nobody.
  header.writeUInt16BE(0x8000 | 0x0400 | (query.recursionDesired ? 0x0100 : 0) | RCODES[rcode], 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  const answers = records.map((record) => {
    const fixed = Buffer.alloc(12);
    fixed.writeUInt16BE(0xc000 | HEADER_BYTES, 0);
    fixed.writeUInt16BE(record.type, 2);
    fixed.writeUInt16BE(CLASS_IN, 4);
    fixed.writeUInt32BE(record.ttl, 6);
    fixed.writeUInt16BE(record.data.length, 10);
    return Buffer.concat([fixed, record.data]);
  });
  return Buffer.concat([header, query.question, ...answers]);
}

/** TXT data: one string of at most 255 bytes. */
export function textData(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8').subarray(0, 255);
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}
