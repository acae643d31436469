// A comparison as terminal text, Markdown and one self-contained HTML page (a before/after chart
// per region), from the same views (views.ts) and with the run report's renderers, escaping and
// charts (coordinator/report/).
import type { RunComparison } from '../../contracts/comparison.js';
import { tableAsText, type Table } from '../report/document.js';
import { badge, chartIds, renderBlock, renderHtmlPage, renderTableHtml, type Part } from '../report/html.js';
import { html } from '../report/html-template.js';
import { shown } from '../report/format.js';
import { escapeMarkdown, tableMarkdown } from '../report/markdown.js';
import {
  beforeAfterChart,
  changedTable,
  comparisonFacts,
  differencesTable,
  findingChangesTable,
  notComparedTable,
  quantityTable,
  regionsOf,
} from './views.js';

interface ComparisonSection {
  id: string;
  heading: string;
  /** What the section says when it has nothing to show. */
  empty: string;
  table: Table;
  /** The column whose words are badges in HTML (verdicts, severities). */
  badges?: number[];
}

function sections(c: RunComparison): ComparisonSection[] {
  return [
    {
      id: 'changed',
      heading: 'What changed',
      empty: 'Nothing regressed or improved: every compared quantity is unchanged.',
      table: changedTable(c),
      badges: [0],
    },
    {
      id: 'findings',
      heading: 'Findings that appeared or disappeared since the run before',
      empty: 'The same findings as in the run before (where both measured).',
      table: findingChangesTable(c),
      badges: [1],
    },
    {
      id: 'differences',
      heading: 'What this run and the run before do not share',
      empty: 'Both runs measured the same things the same way.',
      table: differencesTable(c),
    },
    {
      id: 'quantities',
      heading: 'Every compared quantity',
      empty: 'No quantity of the new run was measured by an earlier run.',
      table: quantityTable(c),
      badges: [9],
    },
    {
      id: 'not-compared',
      heading: 'Not compared',
      empty: 'Everything the new run measured, the earlier runs did too.',
      table: notComparedTable(c),
    },
  ];
}

/** "the 7 earlier runs up to RUN", "the earlier run RUN". */
const baselineTitle = (c: RunComparison) =>
  c.baseline.length === 1
    ? `the earlier run ${c.before.runId}`
    : `the ${c.baseline.length} earlier runs up to ${c.before.runId}`;

export function renderComparisonText(comparison: RunComparison): string {
  const c = shown(comparison);
  const out = [`compare ${c.after.runId} with ${baselineTitle(c)}`];
  for (const [name, value] of comparisonFacts(c)) out.push(`  ${name}: ${value}`);
  for (const s of sections(c)) out.push('', s.heading, s.table.rows.length > 0 ? tableAsText(s.table) : `  ${s.empty}`);
  return `${out.join('\n')}\n`;
}

export function renderComparisonMarkdown(comparison: RunComparison): string {
  const c = shown(comparison);
  const out = [
    `# probefleet comparison: ${escapeMarkdown(c.after.runId)} with ${escapeMarkdown(baselineTitle(c))}`,
    comparisonFacts(c)
      .map(([name, value]) => `- **${name}**: ${escapeMarkdown(value)}`)
      .join('\n'),
  ];
  for (const s of sections(c))
    out.push(`## ${s.heading}`, s.table.rows.length > 0 ? tableMarkdown(s.table) : escapeMarkdown(s.empty));
  return `${out.join('\n\n')}\n`;
}

export function renderComparisonHtml(comparison: RunComparison): string {
  const c = shown(comparison);
  const nextChartId = chartIds();
  const parts: Part[] = [];
  for (const s of sections(c)) {
    const body =
      s.table.rows.length > 0
        ? renderTableHtml(s.table, undefined, {
            cell: (i, text) => (s.badges?.includes(i) ? badge(text) : text),
            wide: s.table.wrap?.flatMap((w, i) => (w > 0 ? [i] : [])),
          })
        : html`<p>${s.empty}</p>`;
    parts.push({ id: s.id, title: s.heading, body });
    if (s.id === 'changed')
      for (const region of regionsOf(c)) {
        const chart = beforeAfterChart(c, region);
        if (chart.groups.length > 0)
          parts.push({
            id: `region-${region}`,
            title: `Before and after from ${region}`,
            body: renderBlock({ kind: 'chart', chart }, nextChartId),
          });
      }
  }
  return renderHtmlPage({
    title: `probefleet: ${c.after.runId} with ${baselineTitle(c)}`,
    heading: `probefleet comparison: ${c.after.plan}`,
    description: `What changed in run ${c.after.runId} against ${baselineTitle(c)}.`,
    facts: comparisonFacts(c),
    parts,
    footer: `Made by probefleet from the run JSONs (${c.schema}); the new run's intervals from its per-request samples.`,
  });
}
