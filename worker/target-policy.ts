// Which addresses a worker may connect to. Redis is a trust boundary: whoever can write a job
// can name any URL, so the worker decides on the address a name resolved to (never on the name
// alone) and connects to that exact address. `resolve` is the one place every probe's
// connections get their address (worker/http/connector.ts, counting-connector.ts).
import { lookup as dnsLookup } from 'node:dns/promises';
import net from 'node:net';

export interface TargetPolicySettings {
  /** Loopback (127.0.0.0/8, ::1): the lab on this machine. */
  readonly allowLoopback: boolean;
  /** CIDRs ("10.77.0.0/16", "fd00::/8", a bare address) and host patterns ("*.internal.example",
   * "db.example") whose private, link-local and other internal addresses are allowed. */
  readonly allowTargets: readonly string[];
}

/** `probefleet run` without Redis: a person probing from their own machine, the lab on loopback. */
export const EMBEDDED_POLICY_SETTINGS: TargetPolicySettings = { allowLoopback: true, allowTargets: [] };

export type TargetDecision = { allowed: true } | { allowed: false; reason: string };

/** Resolves a host name to its addresses (of one family when asked: 4 or 6), in the order to use them. */
export type Lookup = (host: string, family: 0 | 4 | 6) => Promise<{ address: string } | { address: string }[]>;

/** What a connector asks for the address(es) of a host. TargetPolicy answers with the system's
 * lookup alone; TargetAddresses (worker/target-addresses.ts) with a target's own settings. */
export interface AddressResolver {
  /** The one address a connection to `host` goes to, checked. */
  resolve(host: string): Promise<string>;
  /** Every checked address of `host` to race (Happy Eyeballs), in the order to try them; one
   * address when the connection does not race. */
  resolveAll?(host: string): Promise<string[]>;
}

/** A bad `--allow-targets` entry. */
export class TargetPolicyError extends Error {
  override name = 'TargetPolicyError';
}

/** The policy refused the address a target resolved to; classified as TARGET_REFUSED_BY_POLICY. */
export class TargetRefusedError extends Error {
  override name = 'TargetRefusedError';
  readonly code = 'TARGET_REFUSED_BY_POLICY';
}

interface Address {
  family: 4 | 6;
  bytes: number[];
}

interface Cidr extends Address {
  text: string;
  bits: number;
}

/** What it takes to reach an address in a special range: `loopback` needs --allow-loopback,
 * `allow-targets` an entry of --allow-targets; `never`: no TCP target lives there. */
type Permission = 'loopback' | 'allow-targets' | 'never';

const SPECIAL_RANGES: { name: string; cidr: Cidr; needs: Permission }[] = (
  [
    ['"this network" (unspecified)', '0.0.0.0/8', 'never'],
    ['private', '10.0.0.0/8', 'allow-targets'],
    ['shared address space (CGNAT)', '100.64.0.0/10', 'allow-targets'],
    ['loopback', '127.0.0.0/8', 'loopback'],
    ['link-local (cloud metadata lives here)', '169.254.0.0/16', 'allow-targets'],
    ['private', '172.16.0.0/12', 'allow-targets'],
    ['IETF protocol assignments', '192.0.0.0/24', 'allow-targets'],
    ['private', '192.168.0.0/16', 'allow-targets'],
    ['benchmarking', '198.18.0.0/15', 'allow-targets'],
    ['multicast', '224.0.0.0/4', 'never'],
    ['reserved (and broadcast)', '240.0.0.0/4', 'never'],
    ['unspecified', '::/128', 'never'],
    ['loopback', '::1/128', 'loopback'],
    ['unique local', 'fc00::/7', 'allow-targets'],
    ['link-local', 'fe80::/10', 'allow-targets'],
    ['site-local (deprecated)', 'fec0::/10', 'allow-targets'],
    ['multicast', 'ff00::/8', 'never'],
  ] as const
).map(([name, cidr, needs]) => ({ name, cidr: parseCidr(cidr)!, needs }));

/** IPv6 ranges that carry an IPv4 address in their last 32 bits: the IPv4 address is what is reached. */
const EMBEDDING_IPV4 = ['::ffff:0:0/96', '::/96', '64:ff9b::/96', '64:ff9b:1::/48'].map((c) => parseCidr(c)!);
/** 6to4 carries it in bits 16-47. */
const SIX_TO_FOUR = parseCidr('2002::/16')!;

const HOST_PATTERN = /^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** Decisions a policy keeps (it forgets them all when full): a fleet's targets are far fewer. */
const DECISIONS_KEPT = 1024;

export class TargetPolicy implements AddressResolver {
  private readonly cidrs: Cidr[] = [];
  private readonly hostPatterns: string[] = [];
  /** By host and address: a decision depends on nothing else, and is asked for every job and connection. */
  private readonly decisions = new Map<string, TargetDecision>();

  constructor(
    readonly settings: TargetPolicySettings,
    // getaddrinfo, as curl and browsers: /etc/hosts, nsswitch, the system's resolver; its order kept.
    private readonly lookup: Lookup = (host, family) => dnsLookup(host, { all: true, family, order: 'verbatim' }),
  ) {
    for (const entry of settings.allowTargets) {
      const cidr = parseCidr(entry.includes('/') || net.isIP(entry) ? entry : '');
      if (cidr) this.cidrs.push(cidr);
      else if (HOST_PATTERN.test(entry.toLowerCase())) this.hostPatterns.push(entry.toLowerCase());
      else
        throw new TargetPolicyError(
          `"${entry}" is neither a CIDR (10.0.0.0/8, fd00::/8) nor a host pattern (*.internal.example)`,
        );
    }
  }

  /**
   * The address to connect to for `host` (a name or an IP literal, brackets allowed), after
   * checking it. Throws TargetRefusedError when the policy refuses it, or the lookup's error.
   */
  async resolve(host: string): Promise<string> {
    const name = host.startsWith('[') ? host.slice(1, -1) : host;
    const address = net.isIP(name) ? name : (await this.lookUp(name))[0];
    const decision = this.keptDecision(name, address);
    if (!decision.allowed) throw new TargetRefusedError(decision.reason);
    return address;
  }

  /** The system's addresses of a host name (of `family` only when 4 or 6), unjudged: decide() on each. */
  async lookUp(name: string, family: 0 | 4 | 6 = 0): Promise<string[]> {
    const found = await this.lookup(name, family);
    const addresses = (Array.isArray(found) ? found : [found]).map((a) => a.address);
    if (addresses.length === 0) throw Object.assign(new Error(`no address for ${name}`), { code: 'ENOTFOUND' });
    return addresses;
  }

  /** decide(), kept: the same host and address get the same decision from one policy. */
  private keptDecision(host: string, address: string): TargetDecision {
    const key = `${host} ${address}`;
    let decision = this.decisions.get(key);
    if (!decision) {
      if (this.decisions.size >= DECISIONS_KEPT) this.decisions.clear();
      decision = this.decide(host, address);
      this.decisions.set(key, decision);
    }
    return decision;
  }

  /** Whether a connection to `address`, which `host` (the URL's host) resolved to, is allowed. */
  decide(host: string, address: string): TargetDecision {
    const parsed = parseAddress(address);
    if (!parsed) return { allowed: false, reason: `"${address}" is not an IP address` };
    const reached = embeddedIpv4(parsed) ?? parsed;
    const range = SPECIAL_RANGES.find((r) => contains(r.cidr, reached));
    if (!range) return { allowed: true };
    const what = `${address}${host !== address ? ` (${host})` : ''} is ${range.name} (${range.cidr.text})`;
    switch (range.needs) {
      case 'never':
        return { allowed: false, reason: `${what}: never a target` };
      case 'loopback':
        return this.settings.allowLoopback
          ? { allowed: true }
          : { allowed: false, reason: `${what}: allowed only with --allow-loopback` };
      case 'allow-targets':
        if (this.cidrs.some((c) => contains(c, parsed) || contains(c, reached)) || this.hostMatches(host))
          return { allowed: true };
        return { allowed: false, reason: `${what}: allowed only by --allow-targets (a CIDR or a host pattern)` };
    }
  }

  private hostMatches(host: string): boolean {
    const name = host.toLowerCase().replace(/\.$/, '');
    if (net.isIP(name)) return false;
    return this.hostPatterns.some((p) => (p.startsWith('*.') ? name.endsWith(p.slice(1)) : name === p));
  }
}

function parseAddress(text: string): Address | undefined {
  const family = net.isIP(text);
  if (family === 4) return { family, bytes: text.split('.').map(Number) };
  if (family === 6) return { family, bytes: ipv6Bytes(text) };
  return undefined;
}

function ipv6Bytes(address: string): number[] {
  let text = address.split('%')[0];
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number);
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (part: string) => (part ? part.split(':') : []);
  const gap = text.indexOf('::');
  const all =
    gap === -1
      ? groups(text)
      : (() => {
          const left = groups(text.slice(0, gap));
          const right = groups(text.slice(gap + 2));
          return [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
        })();
  return all.flatMap((group) => {
    const n = parseInt(group, 16);
    return [n >> 8, n & 0xff];
  });
}

function parseCidr(text: string): Cidr | undefined {
  const [addressText, bitsText, ...rest] = text.split('/');
  const address = parseAddress(addressText);
  if (!address || rest.length > 0) return undefined;
  const max = address.family === 4 ? 32 : 128;
  const bits = bitsText === undefined ? max : /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : NaN;
  if (!(bits >= 0 && bits <= max)) return undefined;
  return { ...address, bits, text: `${addressText}/${bits}` };
}

function contains(cidr: Cidr, address: Address): boolean {
  if (cidr.family !== address.family) return false;
  for (let bit = 0; bit < cidr.bits; bit += 8) {
    const mask = cidr.bits - bit >= 8 ? 0xff : (0xff << (8 - (cidr.bits - bit))) & 0xff;
    if ((cidr.bytes[bit / 8] & mask) !== (address.bytes[bit / 8] & mask)) return false;
  }
  return true;
}

/** The IPv4 address an IPv6 address reaches (IPv4-mapped, -compatible, NAT64, 6to4), if any. */
function embeddedIpv4(address: Address): Address | undefined {
  if (address.family !== 6) return undefined;
  // ::/128 and ::1/128 are IPv6's own unspecified and loopback, not IPv4-compatible addresses.
  if (address.bytes.slice(0, 15).every((b) => b === 0) && address.bytes[15] <= 1) return undefined;
  if (EMBEDDING_IPV4.some((c) => contains(c, address))) return { family: 4, bytes: address.bytes.slice(12) };
  if (contains(SIX_TO_FOUR, address)) return { family: 4, bytes: address.bytes.slice(2, 6) };
  return undefined;
}
