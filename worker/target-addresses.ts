// Where one job's connections go: the target's host name looked up as its `dns` and `ipFamily`
// say, and every address checked by the worker's target policy before anything connects to it.
// The lookup a connection makes is the one its `resolve` phase times and the one the policy judges:
// no earlier lookup warms a cache the measurement then reads, and a name cannot rebind between the
// check and the connect. Other hosts (a proxy the plan names, a resolver given by name) are looked
// up and checked by the policy alone.
//
// - server `system`: getaddrinfo (dns.lookup: /etc/hosts and nsswitch, as curl and browsers);
//   `HOST:PORT`: a query to that DNS server (c-ares, worker/dns-query.ts), the server's own address
//   checked by the policy first.
// - cache `cold`: a lookup for each new connection, nothing kept; `warm`: looked up once before the
//   measurement (warmUp) and kept for the answer's TTL (for the job, from getaddrinfo, which gives none).
// - ipFamily 4 / 6: only that family's addresses (A or AAAA); `happy-eyeballs`: both, every one
//   given to the connection to race (Node's autoSelectFamily); absent: the first address answered
//   (a DNS server: A first, AAAA when the name has none).
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ProbeError } from '../contracts/common.js';
import type { JobTarget } from '../contracts/job.js';
import type { DnsRecordType } from '../contracts/probes/dns.js';
import type { Resolution } from '../contracts/result.js';
import { query, resolverFor, serversOf } from './dns-query.js';
import { TargetRefusedError, type AddressResolver, type TargetPolicy } from './target-policy.js';

/** A lookup of the target's name that failed: a ConnectError of the resolve phase (DNS_FAILED) where a connection asked. */
export class TargetLookupError extends Error {
  override name = 'TargetLookupError';
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** Distinct answers a job keeps (the most recent are dropped past it): a rotating name shows in a few. */
const ANSWER_SETS_KEPT = 8;
/** The time bound of one query to a DNS server the target names. */
const QUERY_TIMEOUT_MS = 5_000;

interface Answer {
  addresses: string[];
  /** Until when it may be used (performance.now()); Infinity: for the job. */
  expiresAt: number;
}

export class TargetAddresses implements AddressResolver {
  /** The target URL's host, brackets removed. */
  private readonly host: string;
  private readonly isName: boolean;
  private readonly servers: Promise<{ list: string[] | undefined } | { error: ProbeError }> | undefined;
  private kept: Answer | undefined;
  private lookups = 0;
  private fromCache = 0;
  private readonly answerSets = new Map<string, string[]>();

  constructor(
    readonly policy: TargetPolicy,
    private readonly target: Pick<JobTarget, 'url' | 'dns' | 'ipFamily'>,
    private readonly signal: AbortSignal,
  ) {
    const hostname = new URL(target.url).hostname;
    this.host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    this.isName = net.isIP(this.host) === 0;
    const server = target.dns?.server ?? 'system';
    // The server's own address, resolved and checked once: a refused one is every lookup's answer.
    this.servers = this.isName && server !== 'system' ? serversOf(server, policy) : undefined;
  }

  /** Whether the target's connections race both families. */
  get happyEyeballs(): boolean {
    return this.target.ipFamily === 'happy-eyeballs' && this.isName;
  }

  async resolve(host: string): Promise<string> {
    return (await this.resolveAll(host))[0];
  }

  async resolveAll(host: string): Promise<string[]> {
    const bare = host.startsWith('[') ? host.slice(1, -1) : host;
    if (bare !== this.host || !this.isName) return [await this.policy.resolve(bare)];
    const addresses = await this.lookup();
    // Every address answered is judged, not just the one tried first: a name answering a public
    // and an internal address is refused whole.
    for (const address of addresses) {
      const decision = this.policy.decide(this.host, address);
      if (!decision.allowed) throw new TargetRefusedError(decision.reason);
    }
    return this.happyEyeballs ? addresses : addresses.slice(0, 1);
  }

  /**
   * Before the measurement: with a warm cache, the lookup a long-lived client made long ago (its
   * answer checked); with a cold one, nothing for a name (each connection looks it up and is
   * checked then), and an IP address checked as it is. Throws TargetRefusedError, or the lookup's error.
   */
  async warmUp(): Promise<void> {
    if (!this.isName) {
      await this.policy.resolve(this.host);
      return;
    }
    if (this.target.dns?.cache !== 'warm') return;
    await this.resolveAll(this.host);
    // The warm-up is not one of the measurement's lookups.
    this.lookups = 0;
  }

  /** How the job's connections resolved the target's name; undefined when its host is an address. */
  resolution(): Resolution | undefined {
    if (!this.isName) return undefined;
    return {
      server: this.target.dns?.server ?? 'system',
      cache: this.target.dns?.cache ?? 'cold',
      ipFamily: this.target.ipFamily ?? 'any',
      lookups: this.lookups,
      fromCache: this.fromCache,
      answers: [...this.answerSets.values()],
    };
  }

  /** The target's addresses, looked up or from the cache (warm), in the order to try them. */
  private async lookup(): Promise<string[]> {
    const now = performance.now();
    if (this.kept && now < this.kept.expiresAt) {
      this.fromCache++;
      return this.kept.addresses;
    }
    const answer = await this.query();
    this.lookups++;
    const key = [...answer.addresses].sort().join(' ');
    if (!this.answerSets.has(key) && this.answerSets.size < ANSWER_SETS_KEPT)
      this.answerSets.set(key, answer.addresses);
    if (this.target.dns?.cache === 'warm') this.kept = answer;
    return answer.addresses;
  }

  private async query(): Promise<Answer> {
    const family = this.target.ipFamily;
    if (!this.servers) {
      // The system's lookup: one call, both families in its order unless one is asked.
      const addresses = await this.policy.lookUp(this.host, family === 4 || family === 6 ? family : 0);
      return { addresses, expiresAt: Number.POSITIVE_INFINITY };
    }
    const servers = await this.servers;
    if ('error' in servers) {
      if (servers.error.code === 'TARGET_REFUSED_BY_POLICY') throw new TargetRefusedError(servers.error.message);
      throw new TargetLookupError(
        `the DNS server ${this.target.dns?.server}: ${servers.error.message}`,
        servers.error.code,
      );
    }
    const types: DnsRecordType[][] =
      family === 4
        ? [['A']]
        : family === 6
          ? [['AAAA']]
          : family === 'happy-eyeballs'
            ? [['AAAA', 'A']]
            : [['A'], ['AAAA']];
    // Each step's types are asked at once; the next step only when the name had none of them.
    for (const step of types) {
      const answers = await Promise.all(step.map((type) => this.ask(servers.list, type)));
      const addresses = answers.flatMap((a) => a.addresses);
      if (addresses.length > 0) return { addresses, expiresAt: Math.min(...answers.map((a) => a.expiresAt)) };
    }
    throw new TargetLookupError(
      `${this.target.dns?.server} has no ${types.flat().join(' or ')} record for ${this.host}`,
      'ENODATA',
    );
  }

  /** One query of one record type; an answer without records is empty, a failure throws. */
  private async ask(servers: string[] | undefined, type: DnsRecordType): Promise<Answer> {
    // Cold: a new Resolver for each query, so nothing is kept between them (worker/probes/dns.ts).
    const started = performance.now();
    const answer = await query(resolverFor(servers, QUERY_TIMEOUT_MS), this.host, type, QUERY_TIMEOUT_MS, this.signal);
    if (!answer) throw new TargetLookupError(`looking ${this.host} up was stopped: the job's time bound`, 'ECANCELLED');
    if (answer.outcome === 'nodata') return { addresses: [], expiresAt: Number.POSITIVE_INFINITY };
    if (answer.error) throw new TargetLookupError(answer.error.message, answer.outcome.toUpperCase());
    return { addresses: answer.answers, expiresAt: started + answer.ms + (answer.ttl ?? 0) * 1000 };
  }
}
