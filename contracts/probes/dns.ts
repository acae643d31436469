// The `dns` probe: how long does resolving the target's host name take, per resolver and record
// type, cold (no cache in the client) and warm (a client that keeps answers for their TTL)?
import { z } from 'zod';
import { distinct, percentilesSchema, probeErrorSchema } from '../common.js';
import { isLabUrl, LAB_DNS_SERVER, LAB_DNS_ZONE, parseLabUrl } from '../lab-roles.js';
import { DNS_CACHES, DNS_MAX_ANSWERS, hostNameOf, parseResolver, RESOLVER_PROBLEM } from '../resolver.js';
import { defineProbe, sequential } from './define.js';

export const DNS_RECORD_TYPES = ['A', 'AAAA'] as const;
export type DnsRecordType = (typeof DNS_RECORD_TYPES)[number];

/** How one lookup ended, in DNS's terms. `answer` and `nodata` (the name exists, without a record
 * of the type) are answers; the others are failures (DNS_FAILED, the outcome in the message). */
export const DNS_OUTCOMES = [
  'answer',
  'nodata',
  /** NXDOMAIN: the name does not exist. */
  'nxdomain',
  'servfail',
  'refused',
  /** No answer within `timeoutMs`. */
  'timeout',
  /** The resolver could not be reached (an ICMP port unreachable: nothing listens there). */
  'unreachable',
  /** An answer that is no DNS message, or not an answer to the question. */
  'bad-response',
  'other',
] as const;
export type DnsOutcome = (typeof DNS_OUTCOMES)[number];

/** Distinct answer sets a job lists (the most frequent first); `distinctAnswerSets` counts them all. */
export const DNS_ANSWER_SETS_LISTED = 20;

/** `system`, `lab:dns` or `HOST[:PORT]` (contracts/resolver.ts): the dns probe's resolvers and a target's `dns.server`. */
export const resolverSchema = z
  .string()
  .max(262)
  .refine((text) => parseResolver(text) !== undefined, { message: RESOLVER_PROBLEM });

export const dnsLookupSchema = z.strictObject({
  /** 0-based position in the job's sequence. */
  seq: z.int().nonnegative(),
  /** From asking to the answer or the failure, ms; a warm cache hit is the cache's own time. */
  ms: z.number().nonnegative(),
  /** Served from the client's cache (warm): no query was sent. */
  fromCache: z.boolean(),
  outcome: z.enum(DNS_OUTCOMES),
  /** The addresses answered, in the resolver's order (at most DNS_MAX_ANSWERS). */
  answers: z.array(z.string()).max(DNS_MAX_ANSWERS),
  /** Seconds the answer may still be used: its TTL as answered, or what the cache has left of it;
   * null without one (a failure, no data). */
  ttl: z.int().nonnegative().nullable(),
  /** A failed lookup's code (DNS_FAILED; TARGET_REFUSED_BY_POLICY; DEADLINE_EXCEEDED). */
  error: probeErrorSchema.optional(),
});
export type DnsLookup = z.infer<typeof dnsLookupSchema>;

/** Is the target's host a name the probe can look up? A reason when it is not. */
function dnsTargetProblem(url: string): string | undefined {
  if (isLabUrl(url)) {
    const parsed = parseLabUrl(url);
    if (!('role' in parsed) || parsed.role === 'dns') return undefined;
    return `its URL ${url} is the lab's address, no name to look up: name one the lab's DNS server answers (lab:dns/NAME, a host under ${LAB_DNS_ZONE})`;
  }
  if (!URL.canParse(url) || hostNameOf(url) !== undefined) return undefined;
  return `its host ${new URL(url).hostname} is an IP address: there is no name to look up (give its URL with a host name)`;
}

export const dnsProbe = defineProbe({
  kind: 'dns',
  summary:
    "Lookups of the target URL's host name per resolver and record type, cold (a query each) and warm (a client cache honouring the TTL)",
  question: "how long does looking the target's host name up take, per resolver and record type, cold vs warm?",
  jobs: 'one job per resolver in `resolvers` (`system`, `lab:dns`, `HOST[:PORT]`), record type in `recordTypes` (`A`, `AAAA`) and cache in `caches`: `cold` (a query each, nothing kept in the client), `warm` (a client cache honouring the TTL); targets whose host is a name only (see [The dns probe](probes.md#the-dns-probe))',
  findings: {
    DNS_SLOW: {
      severity: 'warning',
      title: 'Looking the name up is slow (cold lookups over the threshold)',
      situation:
        'A DNS lookup of the name with nothing cached in the client (a new process, an expired cache) takes longer than slowMs',
      advice:
        'Use a resolver near the clients (a local caching resolver, the platform one); give the record a TTL long enough for caches to keep it; keep a DNS cache and connections in long-lived clients so few requests pay for a lookup',
      when: 'a `cold` job: the median of its answered lookups is over `slowMs` (100 ms)',
    },
    DNS_ANSWERS_CHANGE: {
      severity: 'info',
      title: "The name's addresses change from one lookup to the next",
      situation:
        'Lookups of the same name get different sets of addresses (DNS load balancing, failover, or resolvers and records that disagree)',
      advice:
        'If intended, make sure every address serves the same thing and that clients look the name up again after the TTL (a client that pins one address keeps using a removed one); if not, check the records and the resolvers behind the name',
      when: "(info) a job's answered lookups got more than one set of addresses (order aside; an empty answer counts as a set)",
    },
  },
  targetProblem: dnsTargetProblem,
  sendsToTarget: false,
  params: z.strictObject({
    /** Where the lookups go, one job each: `system` (the worker's own resolvers, from
     * /etc/resolv.conf), `lab:dns`, or `HOST[:PORT]` (checked by the worker's target policy). */
    resolvers: distinct(z.array(resolverSchema).min(1).max(8), 'resolver').default(['system']),
    /** One job per record type. */
    recordTypes: distinct(z.array(z.enum(DNS_RECORD_TYPES)).min(1), 'record type').default(['A']),
    /** One job per cache mode. */
    caches: distinct(z.array(z.enum(DNS_CACHES)).min(1), 'cache').default(['cold', 'warm']),
    /** Lookups per job, one after another. */
    lookups: z.int().min(1).max(1000).default(20),
    /** A pause between lookups, so a warm cache meets its TTL (and a rotating name rotates). */
    intervalMs: z.int().min(0).max(60_000).default(0),
    /** Bound on each lookup. */
    timeoutMs: z.int().min(1).max(30_000).default(5_000),
    /** DNS_SLOW when the median cold lookup takes longer. */
    slowMs: z.number().min(0).max(60_000).default(100),
  }),
  variant: z.strictObject({
    /** As the plan gives it (a `lab:dns` as the lab's address). */
    resolver: z.string(),
    recordType: z.enum(DNS_RECORD_TYPES),
    cache: z.enum(DNS_CACHES),
  }),
  details: z.strictObject({
    /** The host name looked up: the target URL's host. */
    name: z.string(),
    /** Where the queries went: the resolver's address as the target policy allowed it, or the
     * system's servers (`system`); empty when none was allowed. */
    servers: z.array(z.string()).max(16),
    /** Every answered lookup (warm: cache hits included). */
    lookupMs: percentilesSchema.nullable(),
    /** The answered lookups that sent a query (warm: the cache's misses). */
    queryMs: percentilesSchema.nullable(),
    /** Lookups that sent a query. */
    queries: z.int().nonnegative(),
    /** Lookups served from the cache (warm). */
    cacheHits: z.int().nonnegative(),
    /** Different sets of addresses answered (order aside). */
    distinctAnswerSets: z.int().nonnegative(),
    /** The sets (sorted addresses), the most frequent first, at most DNS_ANSWER_SETS_LISTED. */
    answerSets: z
      .array(z.strictObject({ answers: z.array(z.string()), lookups: z.int().positive(), firstSeq: z.int() }))
      .max(DNS_ANSWER_SETS_LISTED),
    samples: z.array(dnsLookupSchema),
  }),
  labParams: {
    of: (params) => params.resolvers.filter((r) => r === LAB_DNS_SERVER),
    resolved: (params, at) => ({
      ...params,
      resolvers: params.resolvers.map((r) => (r === LAB_DNS_SERVER ? at(r) : r)),
    }),
  },
  variants: (params) =>
    params.resolvers.flatMap((resolver) =>
      params.recordTypes.flatMap((recordType) => params.caches.map((cache) => ({ resolver, recordType, cache }))),
    ),
  demands: (params) => sequential({ value: params.lookups, param: 'lookups', how: `${params.lookups} lookups` }),
});
