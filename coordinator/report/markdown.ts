// The run report as GitHub-flavoured Markdown, for a pull request or a wiki: the same views as
// the HTML report, tables only (the charts' numbers are in the tables). Every string from the
// run is escaped, so a value a server sent cannot become a link, an image or markup.
import { reportOf, type RunReport, type RunReportHead } from '../../contracts/result.js';
import type { RunOutcome } from '../run-outcome.js';
import type { ReportBlock, Table } from './document.js';
import { shown } from './format.js';
import { reportFacts } from './report-facts.js';
import {
  comparedRegions,
  costByRegionTable,
  costByRegionTitle,
  costBlock,
  h3Block,
  labelBlocks,
  leftOutNote,
  notableKeptNote,
  type RunShownInPart,
  decisionTable,
  hasThresholds,
  thresholdsTable,
  findingsTable,
  probeSections,
  unfinishedTable,
} from './run-views.js';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/**
 * Plain text as Markdown that renders as the same text, within a line: `<`, `>` and `&` as
 * entities (no HTML), emphasis, link, code and table characters backslash-escaped, and line
 * breaks as spaces (a table cell is one line).
 */
export function escapeMarkdownInline(text: string): string {
  return (
    text
      .replace(/\s*[\r\n]+\s*/g, ' ')
      .replace(/[&<>]/g, (c) => ENTITIES[c])
      .replace(/[\\`*[\]|~]/g, (c) => `\\${c}`)
      // An underscore inside a word (SERVER_CLOSES) never starts emphasis; one at a word's edge may.
      .replace(/(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])/g, '\\_')
  );
}

/** As `escapeMarkdownInline`, and a start that would open a heading, list or setext line escaped too. */
export function escapeMarkdown(text: string): string {
  return escapeMarkdownInline(text).replace(/^(?:[#+=-]|\d+(?=[.)]))/, (c) => (/\d/.test(c) ? `${c}\\` : `\\${c}`));
}

export function tableMarkdown(table: Table): string {
  const row = (cells: string[]) => `| ${cells.map(escapeMarkdownInline).join(' | ')} |`;
  const rule = `|${table.headers.map((_, i) => (table.align[i] === 'r' ? ' ---: ' : ' --- ')).join('|')}|`;
  return [row(table.headers), rule, ...table.rows.map(row)].join('\n');
}

const notesMarkdown = (notes: string[] | undefined) =>
  notes && notes.length > 0 ? [notes.map((n) => `- ${escapeMarkdown(n)}`).join('\n')] : [];

export function blockMarkdown(block: ReportBlock): string[] {
  switch (block.kind) {
    case 'chart':
      return [];
    case 'table':
      return [`**${escapeMarkdown(block.title)}**`, tableMarkdown(block.table), ...notesMarkdown(block.notes)];
    case 'text':
      return [escapeMarkdown(block.text), ...notesMarkdown(block.notes)];
  }
}

/** The Markdown report; with `inPart`, `run` holds only the notable results of a run too big to
 * show whole, and the sections with a row per job are left out. */
export function renderMarkdownReport(run: RunReport, inPart?: RunShownInPart): string {
  const report = shown(run);
  const out: string[] = [`# probefleet run report: ${escapeMarkdown(report.plan.name)}`];
  if (report.plan.description) out.push(escapeMarkdown(report.plan.description));
  out.push(
    reportFacts(report, inPart)
      .map(([name, value]) => `- **${name}**: ${escapeMarkdown(value)}`)
      .join('\n'),
  );
  if (inPart) out.push(escapeMarkdown(leftOutNote(inPart.resultCount)));
  if (report.comparisons.length > 0) {
    out.push('## New-connection cost');
    if (comparedRegions(report).length > 1)
      out.push(`**${costByRegionTitle('−')}**`, tableMarkdown(costByRegionTable(report)));
    out.push(...blockMarkdown(costBlock(report)));
  }
  if (!inPart) {
    const byLabel = labelBlocks(report);
    if (byLabel.length > 0) out.push('## Targets by label', ...byLabel.flatMap(blockMarkdown));
    const h3 = h3Block(report);
    if (h3) out.push('## HTTP/3', ...blockMarkdown(h3));
    for (const { section } of probeSections(report))
      out.push(`## ${escapeMarkdown(section.heading)}`, ...section.blocks.flatMap(blockMarkdown));
  }
  const unfinished = unfinishedTable(report);
  const kept = inPart ? notableKeptNote(report) : undefined;
  if (unfinished.rows.length > 0)
    out.push(
      '## Jobs that did not finish cleanly',
      tableMarkdown(unfinished),
      ...(kept ? [escapeMarkdown(`(${kept})`)] : []),
    );
  out.push(
    '## Findings',
    report.findings.length > 0
      ? tableMarkdown(findingsTable(report))
      : 'No findings: nothing this run measured needs attention.',
  );
  out.push(
    '## Decision table',
    report.decisions.length > 0
      ? tableMarkdown(decisionTable(report))
      : 'No decisions: the run found nothing to change.',
  );
  if (hasThresholds(report)) out.push('## Thresholds', tableMarkdown(thresholdsTable(report)));
  return `${out.join('\n\n')}\n`;
}

/** The Markdown report of a run shown from its parts: what its head holds (renderRunSummary's). */
export const renderMarkdownSummary = (head: RunReportHead, outcome: RunOutcome) =>
  renderMarkdownReport(reportOf(head, head.notableResults), { resultCount: head.resultCount, outcome });
