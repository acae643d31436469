// The catalogue of findings: named, documented diagnoses. A probe or the run analysis emits a
// finding by code; its title and advice come from here, so the decision table and the docs
// (docs/catalogue.md, generated) never drift from the code. A probe's own findings are in its
// contract (contracts/probes/<kind>.ts, `findings`); here are those of the run analysis, which
// judges any probe's results.
import { z } from 'zod';
import { nameSchema, SEVERITIES, type FindingSpec } from './common.js';
import { PROBE_KINDS, PROBES, type ProbeKind } from './probes/index.js';

/** Findings of the run analysis (coordinator/analysis*.ts), about any probe's results. */
export const RUN_FINDINGS = {
  // retransmission timeouts (coordinator/analysis-retransmissions.ts)
  CONNECT_RETRANSMITTED: {
    severity: 'warning',
    title: 'Some connects waited for a retransmitted SYN (1 s or more each)',
    situation:
      'New connections sometimes lose their SYN or SYN-ACK and wait a whole retransmission timeout (1 s, then more)',
    advice:
      'Reuse connections so fewer requests pay for a connect; find the loss (the path, or a full listen queue on the server: nstat TcpExtListenOverflows); keep connect timeouts well above 1 s + RTT, where one lost SYN would fail the request',
    when: "(run analysis, per job) connects on new connections (reuse, drain, compression, cors, tls; 5 or more) of which some took at least 0.9 s longer than the job's median and 4 × its spread below the median (p50 − p10): each waited for a retransmitted SYN (a 1 s timeout, then more); not when the measuring thread waited for a CPU (the job's `cpuWaitMs`) half as long as the steps or more (a busy machine stalls as a loss does); the evidence lists the waits, their sum, p95 and p99",
  },
  HANDSHAKE_RETRANSMITTED: {
    severity: 'warning',
    title: 'Some TLS handshakes waited for a retransmission timeout (200 ms or more each)',
    situation: 'A flight of the TLS handshake is sometimes lost and resent only after a retransmission timeout',
    advice:
      'Reuse connections and resume sessions so fewer requests handshake; prefer TLS 1.3 (one flight fewer to lose); find the loss on the path; keep the certificate chain short (fewer packets per flight)',
    when: "(run analysis, per job) the same for TLS handshakes with a step of 180 ms or more (Linux's smallest retransmission timeout is 200 ms); full and resumed handshakes each against their own median",
  },
  // Alt-Svc (coordinator/analysis-alt-svc.ts)
  H3_ADVERTISED: {
    severity: 'info',
    title: 'The server advertises HTTP/3 (Alt-Svc)',
    situation: 'Server advertises HTTP/3 in Alt-Svc, so browsers will try QUIC (UDP) on that port',
    advice:
      'Keep UDP to that port open end to end and the HTTP/3 endpoint serving the same content; drop the header where it is not (clients wait on a dead QUIC port before falling back)',
    when: '(info) a response carried `Alt-Svc` with an HTTP/3 alternative (`h3`, `h3-29`...): protocol, port and max-age (86400 s when absent); not measured (see [probes.md](probes.md#http3))',
  },
  // the target's name and address families (coordinator/analysis-resolution.ts)
  SLOW_NAME_RESOLUTION: {
    severity: 'warning',
    title: "New connections wait for a slow lookup of the target's name",
    situation: "Every new connection first waits for the target's name to resolve, and the lookup is slow",
    advice:
      'Use a resolver near the clients (a local caching resolver); give the record a TTL that lets clients cache it; keep a DNS cache and reuse connections in long-lived clients so few requests pay for a lookup',
    when: "(run analysis, per job) a target with a host name whose connections looked it up: the median of the job's `resolve` phase is over 100 ms",
  },
  TARGET_ADDRESSES_CHANGE: {
    severity: 'info',
    title: "The target's name resolved to different addresses from one connection to the next",
    situation:
      'Lookups of the target name made for its connections answered different sets of addresses (DNS load balancing, failover, or records that disagree)',
    advice:
      'If intended, make sure every address serves the same thing and that clients look the name up again after the TTL; a client pinning one address keeps using a removed one',
    when: "(info; run analysis, per job) the job's lookups of the target's name answered more than one set of addresses (order aside): the target's `dns.cache: cold`, or a TTL shorter than the job",
  },
  IP_FAMILY_FAILS: {
    severity: 'warning',
    title: 'One IP family of a dual-stack target fails where the other answers',
    situation:
      'The target answers over one IP family and not the other: clients that try the broken family first wait for it to fail (Happy Eyeballs: 250 ms and more; without it, a connect timeout)',
    advice:
      'Fix the broken family end to end (the record, routing, firewall, the server listening on it), or withdraw its record (A or AAAA) until it works',
    when: '(run analysis) the NAME-ipv4 and NAME-ipv6 jobs of a target with `ipFamily: both` (same region, probe and variant): one answered no request, the other at least one',
  },
  IP_FAMILY_SLOWER: {
    severity: 'info',
    title: 'One IP family of a dual-stack target is much slower to connect',
    situation:
      'New connections over one IP family take much longer than over the other: a longer path (a tunnel, NAT64, another route), or a slower network for that family; clients that prefer IPv6 pay it on each new connection',
    advice:
      'Find the path difference (traceroute -4 / -6 from the region); fix the slow family, or make sure clients race both (Happy Eyeballs)',
    when: "(info; run analysis) the NAME-ipv4 and NAME-ipv6 jobs of a target with `ipFamily: both`: one family's median connect (over 5 or more each) is at least 1.5 × the other's and at least 5 ms longer",
  },
} as const satisfies Record<string, FindingSpec>;

type ProbeFindingCode = {
  [K in ProbeKind]: keyof NonNullable<(typeof PROBES)[K]['findings']> & string;
}[ProbeKind];
export type FindingCode = keyof typeof RUN_FINDINGS | ProbeFindingCode;

/** Who makes a finding: the probe whose contract holds it, or the run analysis. */
export type FindingSource = ProbeKind | 'run analysis';

/** Every finding: each probe's, in the order of the probe list, then the run analysis's. A code
 * defined twice is a programming error, refused as this module loads. */
export const FINDINGS = catalogue();
export const FINDING_CODES = Object.keys(FINDINGS) as [FindingCode, ...FindingCode[]];

function catalogue(): Record<FindingCode, FindingSpec & { source: FindingSource }> {
  const all: Record<string, FindingSpec & { source: FindingSource }> = {};
  const add = (source: FindingSource, specs: Record<string, FindingSpec>) => {
    for (const [code, spec] of Object.entries(specs)) {
      if (all[code]) throw new Error(`finding ${code} is defined by both ${all[code].source} and ${source}`);
      all[code] = { ...spec, source };
    }
  };
  for (const kind of PROBE_KINDS) add(kind, PROBES[kind].findings ?? {});
  add('run analysis', RUN_FINDINGS);
  return all;
}

export const findingSchema = z.strictObject({
  code: z.enum(FINDING_CODES),
  severity: z.enum(SEVERITIES),
  region: nameSchema,
  target: nameSchema,
  probe: z.string(),
  /** A sentence with the numbers from this run that support the diagnosis. */
  evidence: z.string(),
  /** The same numbers, machine-readable. */
  data: z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])).default({}),
});
export type Finding = z.infer<typeof findingSchema>;

/** Where a finding was seen: the job's region, target and probe. */
export interface FindingPlace {
  region: string;
  target: string;
  probe: string;
}

/** A named rule: the finding of one code that its input shows, or none. */
export type FindingRule<I> = (input: I, where: FindingPlace) => Finding | undefined;

/** The findings of the rules that fire on `input`, in the list's order. */
export function applyRules<I>(rules: readonly FindingRule<I>[], input: I, where: FindingPlace): Finding[] {
  return rules.flatMap((rule) => rule(input, where) ?? []);
}

/** Builds a finding with the catalogue's severity. */
export function finding(code: FindingCode, where: FindingPlace, evidence: string, data: Finding['data'] = {}): Finding {
  return { code, severity: FINDINGS[code].severity, ...where, evidence, data };
}
