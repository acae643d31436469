// The run report as one self-contained HTML page: inline style sheet and SVG charts, no script,
// nothing fetched (a Content-Security-Policy of default-src 'none' makes sure of it: only the
// page's own style sheet, by its hash, may apply). Every string from the run is escaped by the
// `html` template. Order: what was run, the new-connection cost, one section per probe (charts
// first, then tables), jobs that did not finish cleanly, findings, the decision table.
import { createHash } from 'node:crypto';
import { reportOf, type RunReport, type RunReportHead } from '../../contracts/result.js';
import type { RunOutcome } from '../run-outcome.js';
import type { ReportBlock, Table } from './document.js';
import { html, trustedHtml, type Html } from './html-template.js';
import { REPORT_CSS } from './html-style.js';
import {
  comparedRegions,
  costByRegionTable,
  costByRegionTitle,
  labelBlocks,
  leftOutNote,
  notableKeptNote,
  type RunShownInPart,
  costChart,
  costBlock,
  h3Block,
  decisionTable,
  hasThresholds,
  thresholdsTable,
  findingsTable,
  probeSections,
  unfinishedTable,
} from './run-views.js';
import { shown } from './format.js';
import { reportFacts } from './report-facts.js';
import { renderBarChart } from './svg-chart.js';

/** Unique element ids for the charts of one page. */
export function chartIds(): () => string {
  let n = 0;
  return () => `chart-${++n}`;
}

export interface TableOptions {
  /** Columns of running text, kept readable when the table is wide. */
  wide?: number[];
  /** Markup for a cell instead of its text (escaped all the same by `html`). */
  cell?: (column: number, text: string) => Html | string;
}

export function renderTableHtml(table: Table, caption: string | undefined, options: TableOptions = {}): Html {
  const cls = (i: number) =>
    [
      table.align[i] === 'r' ? 'num' : '',
      options.wide?.includes(i) ? 'wide' : '',
      table.breakable?.includes(i) ? 'breaks' : '',
    ]
      .filter(Boolean)
      .join(' ');
  const attr = (i: number) => (cls(i) ? html` class="${cls(i)}"` : '');
  return html`<div class="table-scroll"><table>${caption ? html`<caption>${caption}</caption>` : ''}<thead><tr>${table.headers.map(
    (h, i) => html`<th scope="col"${attr(i)}>${h}</th>`,
  )}</tr></thead><tbody>${table.rows.map(
    (row) =>
      html`<tr>${row.map((cell, i) => html`<td${attr(i)}>${options.cell ? options.cell(i, cell) : cell}</td>`)}</tr>`,
  )}</tbody></table></div>`;
}

const notesHtml = (notes: string[] | undefined) =>
  notes && notes.length > 0 ? html`<ul class="notes">${notes.map((n) => html`<li>${n}</li>`)}</ul>` : '';

export function renderBlock(block: ReportBlock, nextChartId: () => string): Html {
  switch (block.kind) {
    case 'chart':
      return html`<figure class="chart"><figcaption><strong>${block.chart.title}</strong> <span>${block.chart.description}</span></figcaption>${renderBarChart(block.chart, nextChartId())}</figure>`;
    case 'table':
      return html`${renderTableHtml(block.table, block.title)}${notesHtml(block.notes)}`;
    case 'text':
      return html`<p>${block.text}</p>${notesHtml(block.notes)}`;
  }
}

/** "CODE: title" from the findings table: the code as code, the title under it. */
function findingCell(text: string): Html {
  const [code, ...title] = text.split(': ');
  return html`<code>${code}</code><br>${title.join(': ')}`;
}

/** A word in a coloured outline: a severity (info, warning, critical) or a verdict (regressed, improved, unchanged). */
export const badge = (word: string) => html`<span class="badge badge-${word}">${word}</span>`;

/** The stylesheet's hash for the Content-Security-Policy: the only style the page may apply. */
const STYLE_HASH = `sha256-${createHash('sha256').update(REPORT_CSS).digest('base64')}`;

/** One `<section>` of the page, listed in its navigation. */
export interface Part {
  id: string;
  title: string;
  body: Html;
}

/** The page's sections; with `inPart`, those with a row per job are left out (renderHtmlReport). */
function parts(report: RunReport, inPart?: RunShownInPart): Part[] {
  const nextChartId = chartIds();
  // A plan's targetLabels: a column each, beside the URL.
  const labels = report.plan.targetLabels ?? [];
  const out: Part[] = [
    {
      id: 'targets',
      title: 'Targets',
      body: renderTableHtml(
        {
          headers: ['target', 'URL', ...labels],
          align: `ll${'l'.repeat(labels.length)}`,
          rows: report.plan.targets.map((t) => [t.name, t.url, ...labels.map((l) => t.labels?.[l] ?? '')]),
        },
        undefined,
        {
          cell: (i, text) => (i === 1 ? html`<code>${text}</code>` : text),
        },
      ),
    },
  ];
  if (inPart)
    out.push({ id: 'left-out', title: 'A run this big', body: html`<p>${leftOutNote(inPart.resultCount)}</p>` });
  const byLabel = inPart ? [] : labelBlocks(report);
  if (byLabel.length > 0)
    out.push({
      id: 'targets-by-label',
      title: 'Targets by label',
      body: html`${byLabel.map((b) => renderBlock(b, nextChartId))}`,
    });
  if (report.comparisons.length > 0) {
    out.push({
      id: 'new-connection-cost',
      title: 'New-connection cost',
      body: html`${renderBlock({ kind: 'chart', chart: costChart(report) }, nextChartId)}${
        comparedRegions(report).length > 1 ? renderTableHtml(costByRegionTable(report), costByRegionTitle('−')) : ''
      }${renderBlock(costBlock(report), nextChartId)}`,
    });
  }
  const h3 = inPart ? undefined : h3Block(report);
  if (h3) out.push({ id: 'http3', title: 'HTTP/3', body: renderBlock(h3, nextChartId) });
  for (const { kind, section } of inPart ? [] : probeSections(report)) {
    out.push({
      id: `probe-${kind}`,
      title: section.heading,
      body: html`${section.blocks.map((b) => renderBlock(b, nextChartId))}`,
    });
  }
  const unfinished = unfinishedTable(report);
  const kept = inPart ? notableKeptNote(report) : undefined;
  if (unfinished.rows.length > 0)
    out.push({
      id: 'unfinished',
      title: 'Jobs that did not finish cleanly',
      body: html`${renderTableHtml(unfinished, undefined, { wide: [5] })}${kept ? html`<p>(${kept})</p>` : ''}`,
    });
  const findings = findingsTable(report);
  out.push({
    id: 'findings',
    title: 'Findings',
    body:
      findings.rows.length > 0
        ? renderTableHtml(findings, undefined, {
            wide: [1, 3],
            cell: (i, text) => (i === 0 ? badge(text) : i === 1 ? findingCell(text) : text),
          })
        : html`<p>No findings: nothing this run measured needs attention.</p>`,
  });
  // The decision table with each row's severity in front.
  const decisions = decisionTable(report);
  out.push({
    id: 'decisions',
    title: 'Decision table',
    body:
      decisions.rows.length > 0
        ? renderTableHtml(
            {
              headers: ['', ...decisions.headers],
              align: `l${decisions.align}`,
              rows: decisions.rows.map((row, i) => [report.decisions[i].severity, ...row]),
            },
            'Situation, what to do, and the numbers from this run that say so',
            { wide: [1, 2, 3], cell: (i, text) => (i === 0 ? badge(text) : text) },
          )
        : html`<p>No decisions: the run found nothing to change.</p>`,
  });
  if (hasThresholds(report))
    out.push({
      id: 'thresholds',
      title: 'Thresholds',
      body: renderTableHtml(thresholdsTable(report), "The plan's thresholds against this run", {
        cell: (i, text) => (i === 0 ? badge(text) : text),
      }),
    });
  return out;
}

export interface HtmlPage {
  /** The browser tab's title. */
  title: string;
  heading: string;
  description?: string;
  facts: [string, string][];
  parts: Part[];
  footer: string;
}

/** A whole page: head with the Content-Security-Policy and style sheet, facts, navigation, parts. */
export function renderHtmlPage(page: HtmlPage): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src '${STYLE_HASH}'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="probefleet">
<title>${page.title}</title>
<style>${trustedHtml(REPORT_CSS)}</style>
</head>
<body>
<header>
<h1>${page.heading}</h1>
${page.description ? html`<p class="muted">${page.description}</p>` : ''}
<dl class="facts">${page.facts.map(([name, value]) => html`<dt>${name}</dt><dd>${value}</dd>`)}</dl>
<nav aria-label="Sections"><ul>${page.parts.map(({ id, title }) => html`<li><a href="#${id}">${title}</a></li>`)}</ul></nav>
</header>
<main>
${page.parts.map(
  ({ id, title, body }) => html`<section id="${id}"><h2>${title}</h2>${body}</section>
`,
)}</main>
<footer>${page.footer}</footer>
</body>
</html>
`.markup;
}

/** The HTML report; with `inPart`, `run` holds only the notable results of a run too big to show
 * whole, and the sections with a row per job are left out. */
export function renderHtmlReport(run: RunReport, inPart?: RunShownInPart): string {
  const report = shown(run);
  return renderHtmlPage({
    title: `probefleet: ${report.plan.name}, run ${report.runId}`,
    heading: `probefleet run report: ${report.plan.name}`,
    description: report.plan.description,
    facts: reportFacts(report, inPart),
    parts: parts(report, inPart),
    footer: `Made by probefleet from the run JSON (${report.schema}); the numbers are this run's, measured from the regions named above.`,
  });
}

/** The HTML report of a run shown from its parts: what its head holds (renderRunSummary's). */
export const renderHtmlSummary = (head: RunReportHead, outcome: RunOutcome) =>
  renderHtmlReport(reportOf(head, head.notableResults), { resultCount: head.resultCount, outcome });
