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
      heading: 'Findings that appeared or disappeared',
      empty: 'The same findings in both runs (where both measured).',
      table: findingChangesTable(c),
      badges: [1],
    },
    {
      id: 'differences',
      heading: 'What the two runs do not share',
      empty: 'The two runs measured the same things the same way.',
      table: differencesTable(c),
    },
    {
      id: 'quantities',
      heading: 'Every compared quantity',
      empty: 'No quantity was measured by both runs.',
      table: quantityTable(c),
      badges: [9],
    },
    {
      id: 'not-compared',
      heading: 'Not compared',
      empty: 'Everything one run measured, the other did too.',
      table: notComparedTable(c),
    },
  ];
}

export function renderComparisonText(comparison: RunComparison): string {
  const c = shown(comparison);
  const out = [`compare ${c.before.runId} -> ${c.after.runId}`];
  for (const [name, value] of comparisonFacts(c)) out.push(`  ${name}: ${value}`);
  for (const s of sections(c)) out.push('', s.heading, s.table.rows.length > 0 ? tableAsText(s.table) : `  ${s.empty}`);
  return `${out.join('\n')}\n`;
}

export function renderComparisonMarkdown(comparison: RunComparison): string {
  const c = shown(comparison);
  const out = [
    `# probefleet comparison: ${escapeMarkdown(c.before.runId)} → ${escapeMarkdown(c.after.runId)}`,
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
    title: `probefleet: ${c.before.runId} → ${c.after.runId}`,
    heading: `probefleet comparison: ${c.after.plan}`,
    description: `What changed from run ${c.before.runId} to run ${c.after.runId}.`,
    facts: comparisonFacts(c),
    parts,
    footer: `Made by probefleet from the two run JSONs (${c.schema}); intervals from each run's per-request samples.`,
  });
}
