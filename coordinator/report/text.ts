// The run report as terminal text: one section per probe, the new-connection cost per region
// and target, jobs that failed, findings with evidence, and the decision table. With more than
// one region the headline is the new-connection cost per target, one column per region.
import { reportOf, type RunReport, type RunReportHead } from '../../contracts/result.js';
import { renderBlocksAsText, tableAsText } from './document.js';
import { shown } from './format.js';
import {
  comparedRegions,
  costByRegionTable,
  costByRegionTitle,
  costBlock,
  decisionTable,
  hasThresholds,
  thresholdsTable,
  h3Block,
  labelBlocks,
  leftOutNote,
  notableKeptNote,
  probeSections,
  retriedReason,
} from './run-views.js';
import { plural } from '../../common/plural.js';

/** The text report of a run shown from its parts (coordinator/run-parts.ts): what its head holds,
 * without the sections that have a row per job. */
export function renderRunSummary(head: RunReportHead): string {
  return renderRunReport(reportOf(head, head.notableResults), head.resultCount);
}

/** The text report; with `resultCount`, `run` holds only some of the results (a summary). */
export function renderRunReport(run: RunReport, resultCount?: number): string {
  const report = shown(run);
  const summary = resultCount !== undefined;
  const jobs = (resultCount ?? report.results.length) + report.unfinishedJobs.length;
  const out: string[] = [
    `run ${report.runId} (${report.mode}), plan ${report.plan.name}, ${plural(jobs, 'job')}${report.mode === 'distributed' ? `, regions ${report.plan.regions.join(', ')}` : ''}`,
  ];
  if (comparedRegions(report).length > 1) {
    out.push('', costByRegionTitle('-'), tableAsText(costByRegionTable(report)));
  }
  if (summary) out.push('', leftOutNote(resultCount));
  const byLabel = summary ? [] : labelBlocks(report);
  if (byLabel.length > 0) out.push('', renderBlocksAsText(byLabel));
  // Each probe's view (views/<kind>.ts) without its heading: the tables carry their own titles.
  for (const { section } of summary ? [] : probeSections(report)) {
    const text = renderBlocksAsText(section.blocks);
    if (text) out.push('', text);
  }
  if (report.comparisons.length > 0) {
    out.push('', renderBlocksAsText([costBlock(report)]));
  }
  const h3 = summary ? undefined : h3Block(report);
  if (h3) out.push('', renderBlocksAsText([h3]));
  const failed = report.results.filter((r) => r.error);
  const retried = report.results.filter((r) => r.workersLost);
  if (failed.length > 0 || retried.length > 0 || report.unfinishedJobs.length > 0) {
    out.push('', 'Jobs that did not finish cleanly');
    for (const r of retried)
      out.push(
        `  ${r.region} ${r.target} ${r.probe} ${Object.values(r.variant).join(' ')}: RETRIED ${retriedReason(r)}`,
      );
    for (const r of failed)
      out.push(
        `  ${r.region} ${r.target} ${r.probe} ${Object.values(r.variant).join(' ')}: ${r.error?.code} ${r.error?.message}`,
      );
    const kept = summary ? notableKeptNote(report) : undefined;
    if (kept) out.push(`  (${kept})`);
    for (const u of report.unfinishedJobs) {
      out.push(
        `  ${u.region} ${u.target} ${u.probe} ${Object.values(u.variant).join(' ')}: ${u.status === 'failed' ? 'FAILED' : 'NOT RUN'} ${u.reason}`,
      );
    }
  }
  if (report.findings.length > 0) {
    out.push('', 'Findings');
    for (const f of report.findings) out.push(`  [${f.severity}] ${f.code} (${f.target}, ${f.region}): ${f.evidence}`);
  }
  if (report.decisions.length > 0) {
    out.push('', 'Decision table', tableAsText(decisionTable(report)));
  }
  if (hasThresholds(report)) out.push('', 'Thresholds', tableAsText(thresholdsTable(report)));
  return `${out.join('\n')}\n`;
}
