import dgram from 'node:dgram';
import net from 'node:net';
import { LAB_DNS_ZONE } from '../../contracts/lab-roles.js';
import {
  answerTo,
  DNS_TYPES,
  isInternetClass,
  MAX_QUERY_BYTES,
  parseQuery,
  textData,
  type DnsQuery,
  type DnsRecord,
} from '../dns-wire.js';
import type { LabServerSpec } from '../server-spec.js';

/** Names whose queries are counted; the counts start over when there are more. */
const NAMES_COUNTED = 10_000;
/** Delayed answers waiting at once; a query past it is dropped (as a busy server drops one). */
const DELAYED_AT_MOST = 1_000;
const ROTATION = 4;

/** What a name's labels ask of its answer (docs/lab.md): `slow-150.ttl-2.rotate.lab.probefleet.test`. */
interface Behaviour {
  delayMs: number;
  ttl: number;
  rotate: boolean;
  noAaaa: boolean;
  rcode?: 'NXDOMAIN' | 'SERVFAIL';
  drop: boolean;
}

function behaviourOf(labels: string[]): Behaviour {
  const number = (prefix: string, max: number) => {
    const label = labels.find((l) => new RegExp(`^${prefix}-\\d{1,6}$`).test(l));
    return label === undefined ? undefined : Math.min(Number(label.slice(prefix.length + 1)), max);
  };
  return {
    delayMs: number('slow', 10_000) ?? 0,
    ttl: number('ttl', 86_400) ?? 300,
    rotate: labels.includes('rotate'),
    noAaaa: labels.includes('no-aaaa'),
    rcode: labels.includes('nxdomain') ? 'NXDOMAIN' : labels.includes('servfail') ? 'SERVFAIL' : undefined,
    drop: labels.includes('drop'),
  };
}

/** What a name answers: 127.0.0.1, ::1. */
const LOOPBACK = {
  [DNS_TYPES.A]: Buffer.from([127, 0, 0, 1]),
  [DNS_TYPES.AAAA]: Buffer.from([...Array(15).fill(0), 1]),
};

/** The n-th address of a rotating name (0-based): 127.0.0.1-4, or those as IPv4-mapped IPv6. */
function rotated(type: number, n: number): Buffer {
  const last = 1 + (n % ROTATION);
  return type === DNS_TYPES.A
    ? Buffer.from([127, 0, 0, last])
    : Buffer.from([...Array(10).fill(0), 0xff, 0xff, 127, 0, 0, last]);
}

/** The server's answers: what a query gets, when, and how many queries each name had. */
class LabDns {
  private readonly queries = new Map<string, number>();
  private readonly delayed = new Set<NodeJS.Timeout>();

  /** Answers `message` through `reply`, at once or after the name's delay; drops what is no query. */
  handle(message: Buffer, reply: (answer: Buffer) => void): void {
    const query = parseQuery(message);
    if (!query) return;
    const answer = this.answer(query);
    if (!answer) return;
    if (answer.delayMs === 0) return reply(answer.message);
    if (this.delayed.size >= DELAYED_AT_MOST) return;
    const timer = setTimeout(() => {
      this.delayed.delete(timer);
      reply(answer.message);
    }, answer.delayMs);
    this.delayed.add(timer);
  }

  close(): void {
    for (const timer of this.delayed) clearTimeout(timer);
    this.delayed.clear();
  }

  private answer(query: DnsQuery): { message: Buffer; delayMs: number } | undefined {
    const now = (message: Buffer) => ({ message, delayMs: 0 });
    const { name, type } = query;
    if (!isInternetClass(query)) return now(answerTo(query, 'REFUSED'));
    // TXT _queries.NAME: how many A and AAAA queries NAME had (this one not counted).
    if (type === DNS_TYPES.TXT && name.startsWith('_queries.')) {
      const counted = String(this.queries.get(name.slice('_queries.'.length)) ?? 0);
      return now(answerTo(query, 'NOERROR', [{ type, ttl: 0, data: textData(counted) }]));
    }
    if (name !== LAB_DNS_ZONE && !name.endsWith(`.${LAB_DNS_ZONE}`)) return now(answerTo(query, 'REFUSED'));
    const behaviour = behaviourOf(name.split('.'));
    let n = 0;
    if (type === DNS_TYPES.A || type === DNS_TYPES.AAAA) {
      if (this.queries.size >= NAMES_COUNTED && !this.queries.has(name)) this.queries.clear();
      n = this.queries.get(name) ?? 0;
      this.queries.set(name, n + 1);
    }
    if (behaviour.drop) return undefined;
    const records: DnsRecord[] =
      behaviour.rcode ||
      (type !== DNS_TYPES.A && type !== DNS_TYPES.AAAA) ||
      (type === DNS_TYPES.AAAA && behaviour.noAaaa)
        ? []
        : [
            {
              type,
              ttl: behaviour.ttl,
              data: behaviour.rotate ? rotated(type, n) : LOOPBACK[type],
            },
          ];
    return { message: answerTo(query, behaviour.rcode ?? 'NOERROR', records), delayMs: behaviour.delayMs };
  }
}

/** DNS over TCP (RFC 7766): messages with a two-byte length, one connection for many. */
function tcpServer(dns: LabDns): net.Server {
  return net.createServer((socket) => {
    socket.on('error', () => {});
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const message = pending.subarray(2, 2 + pending.readUInt16BE(0));
        pending = pending.subarray(2 + message.length);
        dns.handle(message, (answer) => {
          if (!socket.destroyed)
            socket.write(Buffer.concat([Buffer.from([answer.length >> 8, answer.length & 0xff]), answer]));
        });
      }
      // A length no query has: not DNS, or a client that never ends its message.
      if (pending.length >= 2 && pending.readUInt16BE(0) > MAX_QUERY_BYTES) socket.destroy();
    });
  });
}

const answerers = new WeakMap<net.Server, LabDns>();

/** The UDP side of the server at one address, closed with the (TCP) server. */
function listenUdp(dns: LabDns, server: net.Server, address: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const udp = dgram.createSocket(net.isIPv6(address) ? 'udp6' : 'udp4');
    udp.once('error', reject);
    udp.on('message', (message, peer) => dns.handle(message, (answer) => udp.send(answer, peer.port, peer.address)));
    udp.bind({ port, address, exclusive: true }, () => {
      udp.off('error', reject);
      // A client that went away (an ICMP error on a later send) is no error of the lab's.
      udp.on('error', () => {});
      resolve();
    });
    server.once('close', () => {
      dns.close();
      try {
        udp.close();
      } catch {
        // never bound: nothing to close
      }
    });
  });
}

export const dnsServer: LabServerSpec<'dns'> = {
  name: 'dns',
  offset: 13,
  scheme: 'http',
  protocol: 'dns',
  description: `DNS over UDP and TCP for the names under ${LAB_DNS_ZONE} (A 127.0.0.1, AAAA ::1; labels slow-N, ttl-N, rotate, no-aaaa, nxdomain, servfail, drop change the answer); TXT _queries.NAME says how many queries NAME had`,
  create: () => {
    const dns = new LabDns();
    const server = tcpServer(dns);
    answerers.set(server, dns);
    return server;
  },
  // UDP on the port TCP listens on, at the address it listens on; closed with the TCP server. Where
  // the lab answers at several addresses (TCP on `::`), one socket per address: an answer must come
  // from the address its query went to (dig and stub resolvers drop any other), and a socket on
  // `::` answers from whichever address the route back prefers.
  ready: (server, { host, alsoAt }) => {
    const dns = answerers.get(server)!;
    const { address, port } = server.address() as net.AddressInfo;
    const addresses = alsoAt.length > 0 ? [host, ...alsoAt] : [address];
    return Promise.all(addresses.map((at) => listenUdp(dns, server, at, port))).then(() => {});
  },
};
