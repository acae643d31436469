// `dns`: how long does looking up the target's host name take, per resolver and record type, cold
// and warm? One job per resolver, record type and cache mode, `lookups` lookups one after another
// through node:dns's Resolver (c-ares), which sends the query itself and reports the answer's TTL:
// - cold: a new Resolver per lookup, so nothing is kept in the client (a new process, an expired
//   cache); every lookup is a query to the resolver, whatever the resolver itself keeps.
// - warm: one Resolver and a cache in front of it that keeps an answer for its TTL, as a
//   long-lived client does: the first lookup queries, later ones within the TTL are cache hits.
// `system` is c-ares with the servers the worker's system lists (/etc/resolv.conf): not
// getaddrinfo, which reports no TTL and goes through /etc/hosts and nsswitch. A resolver the plan
// names is checked by the target policy before anything is sent to it; the target's own address
// is never connected to.
import { Resolver } from 'node:dns/promises';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProbeError } from '../../contracts/common.js';
import { applyRules } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { DNS_ANSWER_SETS_LISTED, type DnsLookup } from '../../contracts/probes/dns.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { hostNameOf } from '../../contracts/resolver.js';
import type { Summary } from '../../contracts/result.js';
import { percentiles } from '../../common/stats.js';
import { query, resolverFor, serversOf, type QueryAnswer } from '../dns-query.js';
import { MAX_CONSECUTIVE_FAILURES } from '../http/sequence.js';
import { DNS_RULES } from './dns-findings.js';
import type { Probe, ProbeOutcome } from './probe.js';

type Details = ProbeDetails<'dns'>;

export const runDnsProbe: Probe<'dns'> = async (job, { signal, addresses }) => {
  const { params, variant } = job;
  const name = hostNameOf(job.target.url);
  if (!name)
    return notMeasured({
      code: 'INVALID_JOB',
      message: `target ${job.target.name}'s host is an IP address (${job.target.url}): there is no name to look up`,
    });
  const servers = await serversOf(variant.resolver, addresses);
  if ('error' in servers) return notMeasured(servers.error);

  const lookups = variant.cache === 'cold' ? new ColdLookups(job, servers.list) : new WarmLookups(job, servers.list);
  const samples: DnsLookup[] = [];
  let stoppedEarly: ProbeError | null = null;
  let failuresInARow = 0;
  const start = performance.now();
  for (let seq = 0; seq < params.lookups; seq++) {
    if (seq > 0 && params.intervalMs > 0) await sleep(params.intervalMs, undefined, { signal }).catch(() => {});
    const sample = signal.aborted ? undefined : await lookups.next(seq, name, signal);
    // A lookup the job's bound cut short measured nothing.
    if (!sample) {
      stoppedEarly = {
        code: 'DEADLINE_EXCEEDED',
        message: `time bound reached after ${seq} of ${params.lookups} lookups`,
      };
      break;
    }
    samples.push(sample);
    failuresInARow = sample.error ? failuresInARow + 1 : 0;
    if (failuresInARow >= MAX_CONSECUTIVE_FAILURES && sample.error) {
      stoppedEarly = {
        code: sample.error.code,
        message: `stopped after ${failuresInARow} failed lookups in a row: ${sample.error.message}`,
      };
      break;
    }
  }
  const durationMs = performance.now() - start;
  const failed = samples.filter((s) => s.error);
  if (!stoppedEarly && samples.length > 0 && failed.length === samples.length)
    stoppedEarly = {
      code: failed[0].error!.code,
      message: `all ${samples.length} lookups failed: ${failed[0].error!.message}`,
    };

  const details = detailsOf(name, servers.list, samples);
  return {
    summary: summaryOf(samples, durationMs),
    details,
    findings: applyRules(
      DNS_RULES,
      { variant, details, slowMs: params.slowMs },
      { region: job.region, target: job.target.name, probe: job.probe },
    ),
    error: stoppedEarly,
  };
};

const sampleOf = (seq: number, answer: QueryAnswer): DnsLookup => ({
  seq,
  ms: answer.ms,
  fromCache: false,
  outcome: answer.outcome,
  answers: answer.answers,
  ttl: answer.ttl ?? null,
  ...(answer.error ? { error: answer.error } : {}),
});

interface Lookups {
  /** Lookup `seq`; undefined when the job's signal cut it short. */
  next(seq: number, name: string, signal: AbortSignal): Promise<DnsLookup | undefined>;
}

/** Every lookup a query of its own, from a new Resolver: nothing kept between lookups. */
class ColdLookups implements Lookups {
  constructor(
    private readonly job: JobOf<'dns'>,
    private readonly servers: string[] | undefined,
  ) {}

  async next(seq: number, name: string, signal: AbortSignal): Promise<DnsLookup | undefined> {
    // Made (and /etc/resolv.conf read) before the clock starts.
    const resolver = resolverFor(this.servers, this.job.params.timeoutMs);
    const answer = await query(resolver, name, this.job.variant.recordType, this.job.params.timeoutMs, signal);
    return answer && sampleOf(seq, answer);
  }
}

/** A client's DNS cache in front of one Resolver: an answer is kept for its TTL (a TTL of 0, a
 * failure or an answer without records is not kept, so the next lookup queries again). */
class WarmLookups implements Lookups {
  private readonly resolver: Resolver;
  private kept: { answers: string[]; expiresAt: number } | undefined;

  constructor(
    private readonly job: JobOf<'dns'>,
    servers: string[] | undefined,
  ) {
    this.resolver = resolverFor(servers, job.params.timeoutMs);
  }

  async next(seq: number, name: string, signal: AbortSignal): Promise<DnsLookup | undefined> {
    const start = performance.now();
    const kept = this.kept;
    if (kept && start < kept.expiresAt) {
      const answers = kept.answers;
      return {
        seq,
        ms: performance.now() - start,
        fromCache: true,
        outcome: 'answer',
        answers,
        ttl: Math.floor((kept.expiresAt - start) / 1000),
      };
    }
    const answer = await query(this.resolver, name, this.job.variant.recordType, this.job.params.timeoutMs, signal);
    if (!answer) return undefined;
    this.kept =
      answer.outcome === 'answer' && answer.ttl
        ? { answers: answer.answers, expiresAt: start + answer.ms + answer.ttl * 1000 }
        : undefined;
    return sampleOf(seq, answer);
  }
}

function detailsOf(name: string, servers: string[] | undefined, samples: DnsLookup[]): Details {
  const answered = samples.filter((s) => !s.error);
  const queried = answered.filter((s) => !s.fromCache);
  const sets = new Map<string, { answers: string[]; lookups: number; firstSeq: number }>();
  for (const s of answered) {
    const answers = [...s.answers].sort();
    const key = answers.join(' ');
    const set = sets.get(key);
    if (set) set.lookups++;
    else sets.set(key, { answers, lookups: 1, firstSeq: s.seq });
  }
  return {
    name,
    servers: (servers ?? new Resolver().getServers()).slice(0, 16),
    lookupMs: percentiles(answered.map((s) => s.ms)) ?? null,
    queryMs: percentiles(queried.map((s) => s.ms)) ?? null,
    queries: samples.filter((s) => !s.fromCache).length,
    cacheHits: samples.filter((s) => s.fromCache).length,
    distinctAnswerSets: sets.size,
    answerSets: [...sets.values()]
      .sort((a, b) => b.lookups - a.lookups || a.firstSeq - b.firstSeq)
      .slice(0, DNS_ANSWER_SETS_LISTED),
    samples,
  };
}

/** Lookups are the job's requests; the answered ones' times are its `resolve` phase. No connection is opened. */
function summaryOf(samples: DnsLookup[], durationMs: number): Summary {
  const answered = samples.filter((s) => !s.error);
  const resolve = percentiles(answered.map((s) => s.ms));
  return {
    requests: samples.length,
    errors: samples.length - answered.length,
    connectionsOpened: 0,
    durationMs,
    phases: resolve ? { resolve } : {},
  };
}

function notMeasured(error: ProbeError): ProbeOutcome<'dns'> {
  return {
    summary: { requests: 0, errors: 0, connectionsOpened: 0, durationMs: 0, phases: {} },
    details: null,
    findings: [],
    error,
  };
}
