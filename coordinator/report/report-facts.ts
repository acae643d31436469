// What was run, in a few name/value lines: the head of the HTML and Markdown reports.
import { SEVERITIES } from '../../contracts/common.js';
import type { RunReport } from '../../contracts/result.js';
import { breachedThresholdsLine, failedJobsLine, runOutcome } from '../run-outcome.js';
import { orderedRegions, type RunShownInPart } from './run-views.js';
import { thousands } from '../../common/plural.js';

const seconds = (from: string, to: string) => `${((Date.parse(to) - Date.parse(from)) / 1000).toFixed(1)} s`;

/** With `inPart`, `report` holds only the notable results of a run too big to show whole: its jobs
 * are counted over every page, and its regions are its plan's. */
export function reportFacts(report: RunReport, inPart?: RunShownInPart): [string, string][] {
  const outcome = inPart?.outcome ?? runOutcome(report);
  const jobs = outcome.jobs;
  const severities = SEVERITIES.map((s) => [s, report.findings.filter((f) => f.severity === s).length] as const).filter(
    ([, n]) => n > 0,
  );
  return [
    ['run', report.runId],
    ['mode', report.mode],
    [
      'regions',
      (jobs > 0 && !inPart
        ? orderedRegions(report, [...report.results, ...report.unfinishedJobs])
        : report.plan.regions
      ).join(', '),
    ],
    ['started', `${report.startedAt} (took ${seconds(report.startedAt, report.finishedAt)})`],
    ['jobs', failedJobsLine(outcome) ?? `${thousands(jobs)}: all succeeded`],
    ...(report.thresholds.checks.length + report.thresholds.unchecked.length > 0
      ? [
          [
            'thresholds',
            breachedThresholdsLine(report) ??
              `${report.thresholds.checks.length} checks, none breached` +
                (report.thresholds.unchecked.length > 0 ? `; ${report.thresholds.unchecked.length} not checked` : ''),
          ] as [string, string],
        ]
      : []),
    [
      'findings',
      report.findings.length === 0
        ? 'none'
        : `${report.findings.length}: ${severities.map(([s, n]) => `${n} ${s}`).join(', ')}`,
    ],
  ];
}
