// Turns a run's job results into what people act on: the new-connection cost per region and
// target (with an interval), findings that need more than one job to see, and the decision table.
import type { Phase, RequestSample } from '../contracts/common.js';
import { finding, FINDINGS, type Finding, type FindingCode } from '../contracts/findings.js';
import type { LoadTotal } from '../contracts/probes/load.js';
import type { Comparison, Decision, ProbeResult, ResultOf } from '../contracts/result.js';
import { median, medianDifference } from '../common/stats.js';
import { compressionDecision } from './analysis-compression.js';
import { loadTotals } from './load-totals.js';

export interface RunAnalysis {
  comparisons: Comparison[];
  /** Every finding: the probes' own and the run-level ones. */
  findings: Finding[];
  decisions: Decision[];
  /** Load results per experiment and target, every region merged. */
  loadTotals: LoadTotal[];
}

/** A reused request slower than a new one by this much is not the network: something waits. */
const STALL_THRESHOLD_MS = 20;

type ReuseResult = ResultOf<'reuse'>;

/** A phase's durations over the requests that were answered (a failed request's phases stop wherever it failed). */
export function answeredPhase(samples: readonly Pick<RequestSample, 'phases' | 'error'>[], phase: Phase): number[] {
  return samples.flatMap((s) => (s.error || s.phases[phase] === undefined ? [] : [s.phases[phase]]));
}

const okTotals = (result: ReuseResult | undefined) => answeredPhase(result?.details?.samples ?? [], 'total');

/** reuse results of one region and target, by mode. */
function reuseGroups(
  results: ProbeResult[],
): Map<string, Partial<Record<ReuseResult['variant']['mode'], ReuseResult>>> {
  const groups = new Map<string, Partial<Record<ReuseResult['variant']['mode'], ReuseResult>>>();
  for (const result of results) {
    if (result.probe !== 'reuse') continue;
    const key = `${result.region}\u0000${result.target}`;
    const group = groups.get(key) ?? {};
    group[result.variant.mode] ??= result;
    groups.set(key, group);
  }
  return groups;
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 1)} ms`;

/** Jobs of one target can see the same thing (every TLS version's job reads the certificate): keep one. */
function withoutRepeats(findings: Finding[]): Finding[] {
  const seen = new Set<string>();
  return findings.filter((f) => {
    const key = [f.code, f.region, f.target, f.probe, f.evidence].join('\u0000');
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export function analyzeRun(results: ProbeResult[]): RunAnalysis {
  const comparisons: Comparison[] = [];
  const findings: Finding[] = withoutRepeats(results.flatMap((r) => r.findings));

  for (const { reused, new: fresh } of reuseGroups(results).values()) {
    if (!reused || !fresh) continue;
    const reusedTotals = okTotals(reused);
    const newTotals = okTotals(fresh);
    if (reusedTotals.length < 2 || newTotals.length < 2) continue;
    const cost = medianDifference(reusedTotals, newTotals);
    comparisons.push({
      region: reused.region,
      target: reused.target,
      scheme: reused.variant.scheme,
      reusedMedianMs: median(reusedTotals),
      newMedianMs: median(newTotals),
      newConnectionCostMs: cost,
    });
    const stall = -cost.median;
    if (stall >= STALL_THRESHOLD_MS) {
      const where = answeredPhase(reused.details?.samples ?? [], 'transfer');
      findings.push(
        finding(
          'NAGLE_DELAYED_ACK_STALL',
          { region: reused.region, target: reused.target, probe: 'reuse' },
          `reused requests took a median ${ms(median(reusedTotals))} (of which transfer ${ms(median(where))}) ` +
            `against ${ms(median(newTotals))} on new connections: the body waits for the client's delayed ACK`,
          {
            reusedMedianMs: median(reusedTotals),
            newMedianMs: median(newTotals),
            reusedTransferMedianMs: median(where),
          },
        ),
      );
    }
  }

  return { comparisons, findings, decisions: decide(results, comparisons, findings), loadTotals: loadTotals(results) };
}

function decide(results: ProbeResult[], comparisons: Comparison[], findings: Finding[]): Decision[] {
  const decisions: Decision[] = [];

  const costly = comparisons.filter((c) => c.newConnectionCostMs.median > 0);
  if (costly.length > 0) {
    const worst = costly.reduce((a, b) => (b.newConnectionCostMs.median > a.newConnectionCostMs.median ? b : a));
    decisions.push({
      situation: 'A client makes many requests to the same host',
      action: 'Keep one client and reuse its connections (keep-alive); never a new connection per request',
      evidence: costly
        .map(
          (c) =>
            `${c.target} from ${c.region}: +${ms(c.newConnectionCostMs.median)} per new connection (95% CI ${ms(c.newConnectionCostMs.ci95[0])} to ${ms(c.newConnectionCostMs.ci95[1])})`,
        )
        .join('; '),
      severity: worst.scheme === 'https' ? 'warning' : 'info',
    });
  }

  for (const cold of results) {
    if (cold.probe !== 'reuse' || cold.variant.mode !== 'cold') continue;
    const reused = results.find(
      (r): r is ReuseResult =>
        r.probe === 'reuse' && r.variant.mode === 'reused' && r.region === cold.region && r.target === cold.target,
    );
    const coldTotals = okTotals(cold);
    const reusedTotals = okTotals(reused);
    if (coldTotals.length === 0 || reusedTotals.length === 0) continue;
    decisions.push({
      situation: 'A script starts a new process per request (a shell loop of curl)',
      action: 'Send all requests from one process: curl with many URLs (a glob or --config), or one HTTP client object',
      evidence: `${cold.target} from ${cold.region}: ${ms(median(coldTotals))} per request as separate processes vs ${ms(median(reusedTotals))} over one connection`,
      severity: 'warning',
    });
    break;
  }

  const compression = compressionDecision(results);
  if (compression) decisions.push(compression);

  const byCode = new Map<FindingCode, Finding[]>();
  for (const f of findings) byCode.set(f.code, [...(byCode.get(f.code) ?? []), f]);
  for (const [code, list] of byCode) {
    const spec = FINDINGS[code];
    decisions.push({
      situation: spec.situation,
      action: spec.advice,
      evidence: list.map((f) => `${f.target} from ${f.region}: ${f.evidence}`).join('; '),
      severity: spec.severity,
    });
  }
  return decisions;
}
