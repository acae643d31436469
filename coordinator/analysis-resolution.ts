// How the target's name resolved for its connections (a result's `resolution`), and the two
// families of a dual-stack target side by side. Per job: a slow lookup that every cold connection
// pays, and a name whose addresses changed from one lookup to the next. Per pair of jobs that
// differ only in their family (`ipFamily: both` makes NAME-ipv4 and NAME-ipv6): one family that
// fails where the other answers, and one whose connects take much longer.
import { DUAL_STACK_SUFFIXES } from '../contracts/plan.js';
import { finding, type Finding, type FindingRule } from '../contracts/findings.js';
import type { ProbeResult } from '../contracts/result.js';
import { formatMs } from './report/format.js';

/** A connection's lookup over this is slow (the dns probe's `slowMs` default). */
export const SLOW_RESOLUTION_MS = 100;
/** One family's median connect is this many times the other's, and ... */
export const FAMILY_SLOWER_RATIO = 1.5;
/** ... at least this much longer: loopback's tens of microseconds differ by ratios that cost nothing; ... */
export const FAMILY_SLOWER_MIN_MS = 5;
/** ... over at least this many connects each: one slow connect of two is no family's path. */
export const FAMILY_SLOWER_MIN_CONNECTS = 5;

/** The connections looked the name up, and the median lookup was slow. */
export const slowResolution: FindingRule<ProbeResult> = (result, where) => {
  const resolve = result.summary.phases.resolve;
  if (!result.resolution || result.resolution.lookups === 0 || !resolve || resolve.p50 <= SLOW_RESOLUTION_MS)
    return undefined;
  const { server, cache, lookups } = result.resolution;
  return finding(
    'SLOW_NAME_RESOLUTION',
    where,
    `resolving the name took a median ${formatMs(resolve.p50)} (p95 ${formatMs(resolve.p95)}) over ${lookups} lookups at ${server} (${cache}), over ${SLOW_RESOLUTION_MS} ms: each new connection waits for it`,
    { resolveMedianMs: resolve.p50, lookups, server, cache },
  );
};

/** The lookups of one job answered different sets of addresses. */
export const addressesChanged: FindingRule<ProbeResult> = (result, where) => {
  const answers = result.resolution?.answers ?? [];
  if (answers.length < 2) return undefined;
  return finding(
    'TARGET_ADDRESSES_CHANGE',
    where,
    `${answers.length} different sets of addresses over ${result.resolution!.lookups} lookups: ${answers
      .map((set) => set.join(', ') || 'none')
      .join(' | ')}`,
    { answerSets: answers.length, lookups: result.resolution!.lookups },
  );
};

/** A job's family (4 or 6) and the name it shares with its other family's job, when it is one of a pair. */
function familyOf(result: ProbeResult): { family: 4 | 6; stack: string } | undefined {
  const family = result.resolution?.ipFamily;
  if (family !== 4 && family !== 6) return undefined;
  const suffix = DUAL_STACK_SUFFIXES[family];
  return result.target.endsWith(suffix) ? { family, stack: result.target.slice(0, -suffix.length) } : undefined;
}

const answered = (r: ProbeResult) => r.summary.requests - r.summary.errors;

/** Jobs of a dual-stack target that differ only in their family: one IPv4, one IPv6. */
function familyPairs(results: ProbeResult[]): { v4: ProbeResult; v6: ProbeResult }[] {
  const pairs = new Map<string, { v4?: ProbeResult; v6?: ProbeResult }>();
  for (const result of results) {
    const of = familyOf(result);
    if (!of) continue;
    const key = JSON.stringify([result.region, of.stack, result.probe, result.variant]);
    const pair = pairs.get(key) ?? {};
    pair[of.family === 4 ? 'v4' : 'v6'] = result;
    pairs.set(key, pair);
  }
  return [...pairs.values()].filter((p): p is { v4: ProbeResult; v6: ProbeResult } => !!p.v4 && !!p.v6);
}

const where = (r: ProbeResult) => ({ region: r.region, target: r.target, probe: r.probe });

/** One family answered nothing where the other answered. */
export function familyFails(results: ProbeResult[]): Finding[] {
  return familyPairs(results).flatMap(({ v4, v6 }) => {
    const [failed, working] =
      answered(v6) === 0 && answered(v4) > 0 ? [v6, v4] : answered(v4) === 0 && answered(v6) > 0 ? [v4, v6] : [];
    if (!failed || !working) return [];
    const [lost, kept] = failed === v6 ? ['IPv6', 'IPv4'] : ['IPv4', 'IPv6'];
    return [
      finding(
        'IP_FAMILY_FAILS',
        where(failed),
        `over ${lost} no request was answered (${failed.error ? `${failed.error.code}: ${failed.error.message}` : `${failed.summary.errors} errors`}), over ${kept} ${answered(working)} of ${working.summary.requests} were`,
        { failedFamily: lost, answered: answered(working) },
      ),
    ];
  });
}

/** One family's connects take much longer than the other's. */
export function familySlower(results: ProbeResult[]): Finding[] {
  return familyPairs(results).flatMap(({ v4, v6 }) => {
    const [connects4, connects6] = [v4.summary.phases.connect, v6.summary.phases.connect];
    if (!connects4 || !connects6 || Math.min(connects4.n, connects6.n) < FAMILY_SLOWER_MIN_CONNECTS) return [];
    const [a, b] = [connects4.p50, connects6.p50];
    const [slow, fast, slowMs, fastMs] = b > a ? [v6, v4, b, a] : [v4, v6, a, b];
    if (slowMs < FAMILY_SLOWER_RATIO * fastMs || slowMs - fastMs < FAMILY_SLOWER_MIN_MS) return [];
    const [slowName, fastName] = slow === v6 ? ['IPv6', 'IPv4'] : ['IPv4', 'IPv6'];
    return [
      finding(
        'IP_FAMILY_SLOWER',
        where(slow),
        `${slowName} connects took a median ${formatMs(slowMs)}, ${fastName} ${formatMs(fastMs)} (${fast.target}): ${formatMs(slowMs - fastMs)} more per new connection`,
        { slowFamily: slowName, slowConnectMedianMs: slowMs, fastConnectMedianMs: fastMs },
      ),
    ];
  });
}
