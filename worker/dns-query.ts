// One DNS query through node:dns's Resolver (c-ares), which sends it itself and reports the
// answer's TTL: bounded by a timeout and a signal, its outcome in DNS's terms. The dns probe's
// lookups and a target's own (worker/target-resolver.ts) are made here.
import { Resolver } from 'node:dns/promises';
import { performance } from 'node:perf_hooks';
import type { ProbeError } from '../contracts/common.js';
import type { DnsOutcome, DnsRecordType } from '../contracts/probes/dns.js';
import { DNS_MAX_ANSWERS, parseResolver } from '../contracts/resolver.js';
import { classifyDnsError, classifyError } from './classify-error.js';
import type { AddressResolver } from './target-policy.js';

/**
 * Where the lookups go: the system's servers, or the resolver's address once the target policy
 * allowed it (a host name is looked up as a target's is, then checked).
 */
export async function serversOf(
  resolver: string,
  policy: AddressResolver,
): Promise<{ list: string[] | undefined } | { error: ProbeError }> {
  const spec = parseResolver(resolver);
  if (!spec) return { error: { code: 'INVALID_JOB', message: `"${resolver}" is not a resolver` } };
  if (spec.kind === 'system') return { list: undefined };
  if (spec.kind === 'lab')
    return {
      error: {
        code: 'INVALID_JOB',
        message: `resolver ${resolver} was not made the lab's address: the command that knows where the lab is does that`,
      },
    };
  try {
    const address = await policy.resolve(spec.host);
    return { list: [address.includes(':') ? `[${address}]:${spec.port}` : `${address}:${spec.port}`] };
  } catch (err) {
    return { error: classifyError(err) };
  }
}

/** A resolver that asks `servers` (the system's when undefined), each lookup bounded by `timeoutMs`. */
export function resolverFor(servers: string[] | undefined, timeoutMs: number): Resolver {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  if (servers) resolver.setServers(servers);
  return resolver;
}

/** What one query to the resolver gave. */
export interface QueryAnswer {
  outcome: DnsOutcome;
  answers: string[];
  /** The smallest TTL of the records answered; undefined without records. */
  ttl?: number;
  ms: number;
  error?: ProbeError;
}

/** One query, bounded by `timeoutMs` and the job's signal; undefined when the signal cut it short. */
export async function query(
  resolver: Resolver,
  name: string,
  recordType: DnsRecordType,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<QueryAnswer | undefined> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const start = performance.now();
  const lookup = recordType === 'A' ? resolver.resolve4(name, { ttl: true }) : resolver.resolve6(name, { ttl: true });
  try {
    const answer = await Promise.race([
      lookup,
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      }),
      new Promise<'aborted'>((resolve) => {
        onAbort = () => resolve('aborted');
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
    const ms = performance.now() - start;
    if (answer === 'aborted' || answer === 'timeout') {
      // The lookup's promise then rejects with ECANCELLED; the race has handled it.
      resolver.cancel();
      if (answer === 'aborted') return undefined;
      return {
        outcome: 'timeout',
        answers: [],
        ms,
        error: { code: 'DNS_FAILED', message: `timeout: no answer for ${name} within ${timeoutMs} ms` },
      };
    }
    if (answer.length === 0) return { outcome: 'nodata', answers: [], ms };
    return {
      outcome: 'answer',
      answers: answer.slice(0, DNS_MAX_ANSWERS).map((r) => r.address),
      ttl: Math.min(...answer.map((r) => r.ttl)),
      ms,
    };
  } catch (err) {
    const ms = performance.now() - start;
    if (signal.aborted) return undefined;
    return { ...classifyDnsError(err), answers: [], ms };
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
