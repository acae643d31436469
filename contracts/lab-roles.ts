// The lab target's servers by role, as a plan names them: `url: lab:keepalive/nagle` is the
// keep-alive server's /nagle, wherever the lab listens this time. The entry point that knows
// where the lab is (`run --lab`, `run --lab-at`, `regions run`, `schedule add --lab-at`) turns
// such URLs into real ones before the plan is split (coordinator/lab-targets.ts), so jobs, workers
// and their target policy only ever see http:// and https:// URLs.
import type { Scheme } from './probes/define.js';

/** Every lab server's role and scheme; lab/index.ts has one server per role. */
export const LAB_ROLES = {
  keepalive: 'http',
  close: 'http',
  https: 'https',
  h2: 'https',
  h2c: 'http',
  tls12: 'https',
  mtls: 'https',
  'no-alpn': 'https',
  expired: 'https',
  'self-signed': 'https',
  'wrong-host': 'https',
  'no-resume': 'https',
  'slow-tls': 'https',
  refused: 'http',
  'reset-headers': 'http',
  silent: 'http',
  trickle: 'http',
  'huge-body': 'http',
  'bad-status': 'http',
  'huge-headers': 'http',
  'tls-reset': 'https',
  'h2-goaway': 'https',
  'h2-rst': 'https',
  'decompression-bomb': 'http',
  'h2-push-reset': 'http',
  'echo-headers': 'http',
  'escape-cert': 'https',
  // The DNS server (UDP and TCP): `lab:dns/NAME` is a host name it answers, not a server address.
  dns: 'http',
} as const satisfies Record<string, Scheme>;
export type LabRole = keyof typeof LAB_ROLES;

/** Where a lab listens: one host, a port per server. */
export interface LabAddress {
  host: string;
  ports: Record<LabRole, number>;
}

/** The first port of `probefleet lab` and `run --lab`, as in the HTTP performance lecture's examples
 * (docs/probes.md#sources). */
export const DEFAULT_LAB_PORT = 18170;

/** Each server's port past the lab's first (`probefleet lab --port BASE`), as its spec in lab/servers/
 * says (test/unit/lab-roles.test.ts holds the two together): here too, so that placing a lab
 * (`--lab-at`, `plan expand`) loads none of the servers. */
export const LAB_PORT_OFFSETS: Record<LabRole, number> = {
  keepalive: 0,
  close: 1,
  https: 2,
  h2: 3,
  h2c: 4,
  tls12: 5,
  'no-alpn': 6,
  expired: 7,
  'self-signed': 8,
  'wrong-host': 9,
  'no-resume': 10,
  'slow-tls': 11,
  mtls: 12,
  dns: 13,
  refused: 20,
  'reset-headers': 21,
  silent: 22,
  trickle: 23,
  'huge-body': 24,
  'bad-status': 25,
  'huge-headers': 26,
  'tls-reset': 27,
  'h2-goaway': 28,
  'h2-rst': 29,
  'decompression-bomb': 30,
  'h2-push-reset': 31,
  'echo-headers': 40,
  'escape-cert': 41,
};

/** Where a lab started with `probefleet lab --port BASE` on `host` listens. */
export function labAddressAt(host: string, basePort: number): LabAddress {
  return {
    host,
    ports: Object.fromEntries(
      Object.entries(LAB_PORT_OFFSETS).map(([role, offset]) => [role, basePort + offset]),
    ) as Record<LabRole, number>,
  };
}

export const LAB_URL_PREFIX = 'lab:';
const LAB_URL = /^lab:([a-z0-9-]+)(\/[^\s#]*)?$/;

export function isLabUrl(url: string): boolean {
  return url.startsWith(LAB_URL_PREFIX);
}

/** `lab:ROLE[/path?query]` as its role and path, or a sentence saying what is wrong with it. */
export function parseLabUrl(url: string): { role: LabRole; path: string } | { problem: string } {
  const match = LAB_URL.exec(url);
  if (!match) return { problem: `not a lab URL: "${url}" (lab:SERVER/path, e.g. lab:keepalive/)` };
  const role = match[1];
  if (!Object.hasOwn(LAB_ROLES, role))
    return { problem: `unknown lab server "${role}" (lab servers: ${Object.keys(LAB_ROLES).join(', ')})` };
  const path = match[2] ?? '/';
  const dnsProblem = role === 'dns' ? labDnsPathProblem(path) : undefined;
  return dnsProblem ? { problem: dnsProblem } : { role: role as LabRole, path };
}

/** The real URL of a lab URL at this address. */
export function resolveLabUrl(url: string, lab: LabAddress): string {
  const parsed = parseLabUrl(url);
  if ('problem' in parsed) throw new Error(parsed.problem);
  if (parsed.role === 'dns') return `http://${labDnsName(parsed.path)}/`;
  return `${LAB_ROLES[parsed.role]}://${hostInUrl(lab.host)}:${lab.ports[parsed.role]}${parsed.path}`;
}

const hostInUrl = (host: string) => (host.includes(':') ? `[${host}]` : host);

// The lab's DNS server (lab/servers/dns.ts) answers the names under LAB_DNS_ZONE. A plan names one
// as a target, `lab:dns/slow-150` (http://slow-150.lab.probefleet.test/), and the server as the dns
// probe's resolver, `lab:dns`; the entry point that knows where the lab is makes both real.

/** The zone the lab's DNS server answers (.test is reserved for testing, RFC 6761). */
export const LAB_DNS_ZONE = 'lab.probefleet.test';
/** What a plan writes for the lab's DNS server where an address is wanted (the dns probe's `resolvers`). */
export const LAB_DNS_SERVER = 'lab:dns';
const DNS_LABELS = /^\/(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?){0,7})?$/i;

/** What is wrong with the path of a `lab:dns/NAME` URL, or undefined: NAME is up to 8 labels. */
export function labDnsPathProblem(path: string): string | undefined {
  return DNS_LABELS.test(path)
    ? undefined
    : `lab:dns/NAME names a host under ${LAB_DNS_ZONE}: NAME is up to 8 labels of a-z, 0-9 and "-" joined by dots (lab:dns/slow-150.ttl-2), got "${path.slice(1)}"`;
}

/** The host name `lab:dns/NAME` stands for: NAME under the lab's zone (the zone itself for `lab:dns/`). */
export function labDnsName(path: string): string {
  const name = path.slice(1).toLowerCase();
  return name ? `${name}.${LAB_DNS_ZONE}` : LAB_DNS_ZONE;
}

/** `HOST:PORT` of the lab's DNS server at this address (IPv6 bracketed), for `lab:dns`. */
export function labDnsServerAt(lab: LabAddress): string {
  return `${hostInUrl(lab.host)}:${lab.ports.dns}`;
}
