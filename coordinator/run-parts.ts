// A finished run as what shows it reads it: its head (the report without its results) and its
// results a page at a time, from the report store or from a report in memory. A run small enough
// is shown from its whole report, every view as always; a bigger one from its parts, so `run` and
// `runs show` never hold 100,000 results: the run JSON is written a page at a time and the text
// report is the head's summary.
import { printableJsonText } from '../common/printable.js';
import {
  headOf,
  reportOf,
  type ProbeResult,
  type RunInPages,
  type RunReport,
  type RunReportHead,
} from '../contracts/result.js';
import { type RunOutcome, outcomeCounter } from './run-outcome.js';

/** Runs with at most this many results are shown from their whole report (every view, per job). */
export const WHOLE_REPORT_RESULTS = 10_000;

export type RunParts = RunInPages<RunReportHead>;

export function partsOf(report: RunReport): RunParts {
  return {
    head: headOf(report),
    async *pages() {
      yield report.results;
    },
  };
}

export const isWhole = (run: RunParts) => run.head.resultCount <= WHOLE_REPORT_RESULTS;

export async function wholeReport(run: RunParts): Promise<RunReport> {
  const results: ProbeResult[] = [];
  for await (const page of run.pages()) results.push(...page);
  return reportOf(run.head, results);
}

/** The run JSON (`probefleet.run/v1`) exactly as `printableJsonText(report, 2)` writes it whole,
 * in pieces: the head's fields around the results, each result indented as a member of the array. */
export async function* runJsonText(run: RunParts): AsyncGenerator<string> {
  const skeleton = printableJsonText(reportOf(run.head, []), 2);
  // The top-level member: indented by two spaces (a plan's own keys are deeper).
  const marker = '\n  "results": []';
  const at = skeleton.indexOf(marker);
  yield skeleton.slice(0, at + marker.length - 1);
  let first = true;
  for await (const page of run.pages()) {
    const items = page.map((r) => `    ${printableJsonText(r, 2).replaceAll('\n', '\n    ')}`);
    if (items.length === 0) continue;
    yield `${first ? '\n' : ',\n'}${items.join(',\n')}`;
    first = false;
  }
  yield `${first ? '' : '\n  '}]${skeleton.slice(at + marker.length)}\n`;
}

/** Did the run do what was asked (run-outcome.ts), counted a page at a time. */
export async function outcomeOfParts(run: RunParts): Promise<RunOutcome> {
  const counter = outcomeCounter();
  for await (const page of run.pages()) counter.addResults(page);
  return counter.outcome(run.head.unfinishedJobs);
}
