// Did the run do what was asked? A job succeeded when it has a result without an error; one with
// an error (refused by the target policy, connection refused, a failed response check, its time
// bound) or without a result (a distributed run's failed or not-run jobs) failed. The CLI exits 1
// on any failed job, so a cron job or CI step that runs a plan cannot report green on a dead target.
import type { ProbeResult, RunReport, UnfinishedJob } from '../contracts/result.js';
import { plural, thousands } from '../common/plural.js';

export interface RunOutcome {
  jobs: number;
  failed: number;
  /** Why, most frequent first: an error code, or NOT_RUN / FAILED for a job without a result. */
  reasons: [reason: string, jobs: number][];
}

/** Counts a run's results as they come (a page at a time), then its jobs without one. */
export function outcomeCounter() {
  const reasons = new Map<string, number>();
  const count = (reason: string) => reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  let results = 0;
  return {
    addResults(page: readonly ProbeResult[]): void {
      results += page.length;
      for (const r of page) if (r.error) count(r.error.code);
    },
    outcome(unfinishedJobs: readonly UnfinishedJob[]): RunOutcome {
      for (const u of unfinishedJobs) count(u.status === 'not-run' ? 'NOT_RUN' : 'FAILED');
      return {
        jobs: results + unfinishedJobs.length,
        failed: [...reasons.values()].reduce((a, b) => a + b, 0),
        reasons: [...reasons].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])),
      };
    },
  };
}

export function runOutcome(report: Pick<RunReport, 'results' | 'unfinishedJobs'>): RunOutcome {
  const counter = outcomeCounter();
  counter.addResults(report.results);
  return counter.outcome(report.unfinishedJobs);
}

/** "2 of 12 threshold checks breached: tls-p95 (eu-west api tls 1.3: 212 > 150)"; undefined when none was. */
export function breachedThresholdsLine(report: Pick<RunReport, 'thresholds'>): string | undefined {
  const { checks } = report.thresholds;
  const breached = checks.filter((c) => c.breached);
  if (breached.length === 0) return undefined;
  const shown = breached.slice(0, 5).map((c) => {
    const bound = c.max !== null && c.value > c.max ? `> ${c.max}` : `< ${c.min}`;
    const where = [c.region, c.target, c.probe, ...Object.values(c.variant).map(String)].join(' ');
    return `${c.threshold} (${where}: ${Number(c.value.toPrecision(4))} ${bound})`;
  });
  const more = breached.length > shown.length ? `, and ${breached.length - shown.length} more` : '';
  return `${breached.length} of ${plural(checks.length, 'threshold check')} breached: ${shown.join(', ')}${more}`;
}

/** "2 of 6 jobs failed: 1 CONNECTION_REFUSED, 1 TARGET_REFUSED_BY_POLICY"; undefined when none did. */
export function failedJobsLine(outcome: RunOutcome): string | undefined {
  if (outcome.failed === 0) return undefined;
  const count = thousands;
  return `${count(outcome.failed)} of ${plural(outcome.jobs, 'job')} failed: ${outcome.reasons.map(([reason, n]) => `${count(n)} ${reason}`).join(', ')}`;
}
