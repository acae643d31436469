// The reuse probe's run-level rules, each a small function: the new-connection cost per region and
// target (none printed as a cost when reused requests were not the cheaper ones, or when the server
// closes every connection), the Nagle stall seen in the reused requests alone, and the decision
// rows for keep-alive and for a process per request.
import { finding, type Finding } from '../contracts/findings.js';
import type { Comparison, Decision, ProbeResult, ResultOf } from '../contracts/result.js';
import { median, medianDifference, percentile, sortedCopy } from '../common/stats.js';
import { fmtMs } from '../worker/format.js';
import { answeredPhase } from './samples.js';

type ReuseResult = ResultOf<'reuse'>;
type Mode = ReuseResult['variant']['mode'];

/** The client's delayed-ACK timer: 40 ms at least on Linux, 200 ms at most (macOS ~100, Windows 200). */
const DELAYED_ACK_MS = { min: 35, max: 220 } as const;
/** At least this share of the reused requests sit at the timer, their middle half within this
 * many ms or this fraction of their median, whichever is wider (a busy machine adds jitter). */
const STALLED_SHARE = 0.8;
const CLUSTER_IQR_MS = 10;
const CLUSTER_IQR_SHARE = 0.3;
/** Small enough that the body is the small segment Nagle holds back (loopback's MSS is 64 KiB). */
const SMALL_BODY_BYTES = 64 * 1024;
/** A control request this much faster than the stalled ones shows the connection itself is fast. */
const CONTROL_MARGIN_MS = 20;

function ok(result: ReuseResult | undefined) {
  return (result?.details?.samples ?? []).filter((s) => !s.error && s.phases.total !== undefined);
}
const totals = (result: ReuseResult | undefined) => answeredPhase(result?.details?.samples ?? [], 'total');

/** How long each request on a new connection spent opening it: resolve + connect (+ the proxy's CONNECT) + TLS. */
function setupTimes(result: ReuseResult): number[] {
  return ok(result).flatMap(({ newConnection, phases }) =>
    !newConnection || phases.connect === undefined
      ? []
      : [(phases.resolve ?? 0) + phases.connect + (phases.proxy ?? 0) + (phases.tls ?? 0)],
  );
}

/** The cost's tail: p95 and p99 of the time the new connections took to open (Comparison). */
function costTail(fresh: ReuseResult): Pick<Comparison, 'newConnectionCostTailMs'> {
  const setups = sortedCopy(setupTimes(fresh));
  return setups.length > 0
    ? { newConnectionCostTailMs: { p95: percentile(setups, 95), p99: percentile(setups, 99), n: setups.length } }
    : {};
}

/** reuse results of one region and target, by mode. */
export function reuseGroups(results: readonly ProbeResult[]): Partial<Record<Mode, ReuseResult>>[] {
  const groups = new Map<string, Partial<Record<Mode, ReuseResult>>>();
  for (const result of results) {
    if (result.probe !== 'reuse') continue;
    const key = `${result.region}\u0000${result.target}`;
    const group = groups.get(key) ?? {};
    group[result.variant.mode] ??= result;
    groups.set(key, group);
  }
  return [...groups.values()];
}

const findingOf = (findings: Finding[], code: Finding['code'], where: { region: string; target: string }) =>
  findings.find((f) => f.code === code && f.region === where.region && f.target === where.target);

/**
 * Reused requests after the first, sitting at the delayed-ACK timer with small bodies, while a
 * control was fast: the first request (a fresh connection, where Linux ACKs at once) or the `new`
 * mode's requests. Needs no `new` mode: the reused job is its own evidence.
 */
export function nagleStall(reused: ReuseResult, fresh: ReuseResult | undefined): Finding | undefined {
  const samples = ok(reused);
  const later = samples.filter((s) => !s.newConnection);
  if (later.length < 3) return undefined;
  const laterTotals = later.map((s) => s.phases.total!);
  const atTimer = laterTotals.filter((t) => t >= DELAYED_ACK_MS.min && t <= DELAYED_ACK_MS.max);
  if (atTimer.length < STALLED_SHARE * later.length) return undefined;
  const sorted = sortedCopy(laterTotals);
  if (percentile(sorted, 75) - percentile(sorted, 25) > Math.max(CLUSTER_IQR_MS, CLUSTER_IQR_SHARE * median(sorted)))
    return undefined;
  const bodyBytes = median(later.map((s) => s.bodyBytes));
  if (bodyBytes > SMALL_BODY_BYTES) return undefined;
  const stalled = median(laterTotals);
  const first = samples.find((s) => s.newConnection)?.phases.total;
  const freshTotals = totals(fresh);
  const freshMedian = freshTotals.length >= 2 ? median(freshTotals) : undefined;
  const controls = [first, freshMedian].filter((c): c is number => c !== undefined && c < stalled - CONTROL_MARGIN_MS);
  if (controls.length === 0) return undefined;
  // A client that reports no transfer phase (curl's cold mode can) gives none: said, not computed.
  const transfers = later.flatMap((s) => (s.phases.transfer === undefined ? [] : [s.phases.transfer]));
  const transfer = transfers.length > 0 ? median(transfers) : undefined;
  return finding(
    'NAGLE_DELAYED_ACK_STALL',
    { region: reused.region, target: reused.target, probe: 'reuse' },
    `reused requests took a median ${fmtMs(stalled)}${transfer === undefined ? '' : ` (of which transfer ${fmtMs(transfer)})`}, ${atTimer.length} of ${later.length} ` +
      `at the delayed-ACK timer (${DELAYED_ACK_MS.min}-${DELAYED_ACK_MS.max} ms) for bodies of ${Math.round(bodyBytes)} B, ` +
      `against ${[
        ...(first !== undefined && first < stalled - CONTROL_MARGIN_MS
          ? [`${fmtMs(first)} for the first request (a fresh connection)`]
          : []),
        ...(freshMedian !== undefined && controls.includes(freshMedian)
          ? [`${fmtMs(freshMedian)} on new connections`]
          : []),
      ].join(' and ')}: the body waits for the client's delayed ACK`,
    {
      reusedMedianMs: stalled,
      ...(transfer === undefined ? {} : { reusedTransferMedianMs: transfer }),
      requestsAtTimer: atTimer.length,
      reusedRequests: later.length,
      bodyBytes: Math.round(bodyBytes),
      ...(first !== undefined ? { firstRequestMs: first } : {}),
      ...(freshMedian !== undefined ? { newMedianMs: freshMedian } : {}),
    },
  );
}

/** NAGLE_DELAYED_ACK_STALL, one per region and target whose reused requests stall (nagleStall). */
export function nagleStalls(results: ProbeResult[]): Finding[] {
  return reuseGroups(results).flatMap(({ reused, new: fresh }) => (reused && nagleStall(reused, fresh)) || []);
}

/** Why a comparison has no cost to show, or undefined when it has one. */
export function noCostReason(c: Omit<Comparison, 'noCostReason'>, findings: Finding[]): string | undefined {
  if (findingOf(findings, 'SERVER_CLOSES_EVERY_CONNECTION', c))
    return 'the server closes every connection, so reused requests opened new ones too (SERVER_CLOSES_EVERY_CONNECTION)';
  if (c.newConnectionCostMs.median > 0) return undefined;
  if (findingOf(findings, 'NAGLE_DELAYED_ACK_STALL', c) === undefined && c.newConnectionCostMs.ci95[1] >= 0)
    return `no difference this run can tell: median ${fmtMs(c.newConnectionCostMs.median)}, 95% interval ${fmtMs(c.newConnectionCostMs.ci95[0])} to ${fmtMs(c.newConnectionCostMs.ci95[1])} includes 0 (more requests narrow it)`;
  const slower = `reused requests were the slower ones (median ${fmtMs(c.reusedMedianMs)} vs ${fmtMs(c.newMedianMs)} new)`;
  return findingOf(findings, 'NAGLE_DELAYED_ACK_STALL', c) ? `${slower}: they stall (NAGLE_DELAYED_ACK_STALL)` : slower;
}

/** median(new) − median(reused) per region and target, with why there is none where there is none. */
export function newConnectionComparisons(results: ProbeResult[], findings: Finding[]): Comparison[] {
  const comparisons: Comparison[] = [];
  for (const { reused, new: fresh } of reuseGroups(results)) {
    if (!reused || !fresh) continue;
    const reusedTotals = totals(reused);
    const newTotals = totals(fresh);
    if (reusedTotals.length < 2 || newTotals.length < 2) continue;
    const c = {
      region: reused.region,
      target: reused.target,
      scheme: reused.variant.scheme,
      reusedMedianMs: median(reusedTotals),
      newMedianMs: median(newTotals),
      newConnectionCostMs: medianDifference(reusedTotals, newTotals),
      ...costTail(fresh),
    };
    const reason = noCostReason(c, findings);
    comparisons.push(reason ? { ...c, noCostReason: reason } : c);
  }
  return comparisons;
}

/** Keep-alive: the targets with a cost, and a pointer for each one left out. */
export function keepAliveDecision(comparisons: Comparison[]): Decision | undefined {
  const costly = comparisons.filter((c) => !c.noCostReason);
  if (costly.length === 0) return undefined;
  const worst = costly.reduce((a, b) => (b.newConnectionCostMs.median > a.newConnectionCostMs.median ? b : a));
  const leftOut = comparisons.filter((c) => c.noCostReason);
  return {
    situation: 'A client makes many requests to the same host',
    action: 'Keep one client and reuse its connections (keep-alive); never a new connection per request',
    evidence: [
      ...costly.map(
        (c) =>
          `${c.target} from ${c.region}: +${fmtMs(c.newConnectionCostMs.median)} per new connection (95% CI ${fmtMs(c.newConnectionCostMs.ci95[0])} to ${fmtMs(c.newConnectionCostMs.ci95[1])})`,
      ),
      ...leftOut.map((c) => `${c.target} from ${c.region} left out: ${c.noCostReason}`),
    ].join('; '),
    severity: worst.scheme === 'https' ? 'warning' : 'info',
  };
}

/** How the decision table names the loop that ran: what the `cold` client was. */
function processLoop(client: NonNullable<NonNullable<ReuseResult['details']>['client']> | undefined): {
  loop: string;
  processes: string;
} {
  if (client?.kind === 'node') return { loop: 'a new Node process per request', processes: 'separate Node processes' };
  const name = client?.kind === 'curl' ? 'curl' : (client?.label ?? 'a client');
  return { loop: `a shell loop of ${name}`, processes: `separate ${name} processes` };
}

/** Evidence for the process-per-request rows, by the loop that ran (processLoop). */
export type ColdProcessEvidence = Map<string, { processes: string; evidence: string[] }>;

/** Adds each region and target's cold-process numbers against one connection to `byLoop`. */
export function addColdProcessEvidence(byLoop: ColdProcessEvidence, results: readonly ProbeResult[]): void {
  for (const { cold, reused } of reuseGroups(results)) {
    const coldTotals = totals(cold);
    const reusedTotals = totals(reused);
    if (!cold || coldTotals.length === 0 || reusedTotals.length === 0) continue;
    const { loop, processes } = processLoop(cold.details?.client);
    const row = byLoop.get(loop) ?? { processes, evidence: [] };
    row.evidence.push(
      `${cold.target} from ${cold.region}: ${fmtMs(median(coldTotals))} per request as ${processes} vs ${fmtMs(median(reusedTotals))} over one connection`,
    );
    byLoop.set(loop, row);
  }
}

/** A process per request: one row per client that ran, with its numbers against one connection. */
export function coldProcessDecisions(byLoop: ColdProcessEvidence): Decision[] {
  return [...byLoop].map(([loop, { evidence }]) => ({
    situation: `A script starts a new process per request (${loop})`,
    action: 'Send all requests from one process: curl with many URLs (a glob or --config), or one HTTP client object',
    evidence: evidence.join('; '),
    severity: 'warning',
  }));
}
