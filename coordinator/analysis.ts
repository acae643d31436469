// Turns a run's job results into what people act on: the new-connection cost per region and
// target (with an interval), findings that need more than one job to see, and the decision table.
// Each finding rule is a small function in the analysis file of its probe, run from the lists below.
import { applyRules, FINDINGS, type Finding, type FindingCode, type FindingRule } from '../contracts/findings.js';
import type { LoadTotal } from '../contracts/probes/load.js';
import type { Comparison, Decision, ProbeResult } from '../contracts/result.js';
import { DUAL_STACK_SUFFIXES } from '../contracts/plan.js';
import { compressionDecision, compressionEvidence } from './analysis-compression.js';
import { h3Advertised } from './analysis-alt-svc.js';
import { addressesChanged, familyFails, familySlower, slowResolution } from './analysis-resolution.js';
import { connectRetransmitted, handshakeRetransmitted } from './analysis-retransmissions.js';
import {
  addColdProcessEvidence,
  type ColdProcessEvidence,
  coldProcessDecisions,
  keepAliveDecision,
  nagleStalls,
  newConnectionComparisons,
} from './analysis-reuse.js';
import { loadTotals } from './load-totals.js';
import { groupBy } from '../common/group-by.js';

export interface RunAnalysis {
  comparisons: Comparison[];
  /** Every finding: the probes' own and the run-level ones. */
  findings: Finding[];
  decisions: Decision[];
  /** Load results per experiment and target, every region merged. */
  loadTotals: LoadTotal[];
}

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

/** Rules that need several jobs (a target's reused and new jobs, every probe's Alt-Svc): one finding code each. */
export const RUN_RULES: readonly ((results: ProbeResult[]) => Finding[])[] = [
  nagleStalls,
  h3Advertised,
  familyFails,
  familySlower,
];
/** Rules that judge one job's result on its own, run job by job. */
export const JOB_RULES: readonly FindingRule<ProbeResult>[] = [
  connectRetransmitted,
  handshakeRetransmitted,
  slowResolution,
  addressesChanged,
];

/**
 * The group a result is analysed in: its target, the two families of a dual-stack target together.
 * Every run rule compares results of one region and target (or of a dual-stack pair), and load
 * totals merge one target's regions, so a run analysed a group at a time (RunAnalyzer) holds one
 * target's results, not the run's, and finds what the whole run would.
 */
export function analysisGroupOf(target: string): string {
  for (const suffix of Object.values(DUAL_STACK_SUFFIXES))
    if (target.endsWith(suffix)) return target.slice(0, -suffix.length);
  return target;
}

/** A run's analysis built group by group (analysisGroupOf): `add` each group's results whole, then `finish`. */
export class RunAnalyzer {
  private readonly comparisons: Comparison[] = [];
  private readonly findings: Finding[] = [];
  private readonly loadTotals: LoadTotal[] = [];
  private readonly coldProcesses: ColdProcessEvidence = new Map();
  private readonly compression: string[] = [];

  add(results: ProbeResult[]): void {
    const findings: Finding[] = withoutRepeats(results.flatMap((r) => r.findings));
    for (const rule of RUN_RULES) findings.push(...rule(results));
    for (const r of results)
      findings.push(...applyRules(JOB_RULES, r, { region: r.region, target: r.target, probe: r.probe }));
    this.findings.push(...findings);
    this.comparisons.push(...newConnectionComparisons(results, findings));
    this.loadTotals.push(...loadTotals(results));
    addColdProcessEvidence(this.coldProcesses, results);
    this.compression.push(...compressionEvidence(results));
  }

  finish(): RunAnalysis {
    const { comparisons, findings, loadTotals } = this;
    return { comparisons, findings, decisions: this.decide(), loadTotals };
  }

  private decide(): Decision[] {
    const decisions: Decision[] = [];
    const keepAlive = keepAliveDecision(this.comparisons);
    if (keepAlive) decisions.push(keepAlive);
    decisions.push(...coldProcessDecisions(this.coldProcesses));
    const compression = compressionDecision(this.compression);
    if (compression) decisions.push(compression);

    const byCode = new Map<FindingCode, Finding[]>();
    for (const f of this.findings) byCode.set(f.code, [...(byCode.get(f.code) ?? []), f]);
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
}

/** Results (or jobs) split into their analysis groups (analysisGroupOf), each in the given order. */
export function analysisGroups<T>(items: Iterable<T>, targetOf: (item: T) => string): T[][] {
  return [...groupBy(items, (item) => analysisGroupOf(targetOf(item))).values()];
}

export function analyzeRun(results: ProbeResult[]): RunAnalysis {
  const analyzer = new RunAnalyzer();
  for (const group of analysisGroups(results, (r) => r.target)) analyzer.add(group);
  return analyzer.finish();
}
