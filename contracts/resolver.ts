// How a name is looked up: by the system's resolver, the lab's DNS server or a DNS server the plan
// names, with or without a client cache. Shared by the dns probe (which measures lookups) and a
// target's `dns` settings (how its connections resolve its host name).
// Free of zod: a worker's cold-request child loads it (worker/target-addresses.ts), and starts faster without.
import { LAB_DNS_SERVER } from './lab-roles.js';

/** cold: every lookup is a query of its own, nothing kept in the client; warm: answers are kept
 * for their TTL, as a long-lived client with a DNS cache does. */
export const DNS_CACHES = ['cold', 'warm'] as const;
export type DnsCache = (typeof DNS_CACHES)[number];

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

/** A resolver as the plan gives it: the system's, the lab's, or a server's address. */
export type ResolverSpec = { kind: 'system' } | { kind: 'lab' } | { kind: 'server'; host: string; port: number };

/**
 * `system`, `lab:dns`, or `HOST[:PORT]` (port 53 when absent): an IPv4 address, a bracketed IPv6
 * address (`[2001:db8::53]:53`) or a host name (looked up as the worker looks up a target's, then
 * checked by its target policy). Undefined when the text is none of these.
 */
export function parseResolver(text: string): ResolverSpec | undefined {
  if (text === 'system') return { kind: 'system' };
  if (text === LAB_DNS_SERVER) return { kind: 'lab' };
  const match = /^(\[[0-9a-f:.]+\]|[^[\]:]+)(?::(\d{1,5}))?$/i.exec(text);
  if (!match) return undefined;
  const port = match[2] === undefined ? 53 : Number(match[2]);
  if (port < 1 || port > 65_535) return undefined;
  const host = match[1].startsWith('[') ? match[1].slice(1, -1) : match[1];
  if (match[1].startsWith('[')) {
    if (!URL.canParse(`http://[${host}]/`)) return undefined;
  } else if (IPV4.test(host)) {
    if (host.split('.').some((octet) => Number(octet) > 255)) return undefined;
  } else if (!HOST_NAME.test(host)) return undefined;
  return { kind: 'server', host, port };
}

/** What the plan says of a resolver that is none of these. */
export const RESOLVER_PROBLEM = `a resolver is system, ${LAB_DNS_SERVER} (the lab's DNS server) or HOST[:PORT] (192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53, ns.example:53)`;

/** The addresses one lookup keeps: a resolver may answer more (hundreds over TCP). */
export const DNS_MAX_ANSWERS = 32;

/** The URL's host when it is a name, undefined when it is an IP address (the WHATWG parser writes
 * every IPv4 form as a dotted quad, and IPv6 in brackets). */
export function hostNameOf(url: string): string | undefined {
  const host = new URL(url).hostname;
  return host.startsWith('[') || IPV4.test(host) ? undefined : host;
}
