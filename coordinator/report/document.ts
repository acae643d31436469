// What a report shows, apart from how: tables, bar charts and short texts, built once from a
// run (views/ per probe, run-views.ts for the run as a whole) and rendered as terminal text
// (text.ts), Markdown (markdown.ts) or HTML with SVG charts (html.ts). Every string here is
// plain text; each renderer escapes it for its format.
import { renderTable } from './table.js';

export interface Table {
  headers: string[];
  /** One letter per column: l(eft) or r(ight). */
  align: string;
  rows: string[][];
  /** Terminal only: wrap a column's words at this width (0: never). */
  wrap?: number[];
  /** HTML only: columns whose cells may break onto more lines (a URL, a list of methods) when the
   * page is narrower than the table; every other cell stays on one line. */
  breakable?: number[];
}

/** One bar: a value, optionally with its interval, and the text printed beside it. */
export interface Bar {
  /** Printed left of the bar ("reused", "level 6"). */
  label: string;
  /** Which colour: bars of one series share one, so "reused" looks alike in every group. */
  series: string;
  value: number;
  /** Drawn as a whisker, e.g. a 95% confidence interval. */
  interval?: [number, number];
  /** Printed right of the bar, with its unit ("135.7 ms for 200 requests"). */
  text: string;
}

export interface BarGroup {
  /** A heading row above the group's bars ("https from eu-west"). */
  label: string;
  bars: Bar[];
}

/** A horizontal bar chart: groups of bars on one value axis that starts at (or spans) zero. */
export interface BarChart {
  /** Stable name of what the chart shows (`reuse-total-time`): an anchor, and a handle for tests. */
  id: string;
  title: string;
  /** One or two sentences: what is measured and how to read it. */
  description: string;
  /** How axis ticks are printed. */
  unit: 'ms' | 'bytes' | 'count';
  groups: BarGroup[];
}

export type ReportBlock =
  | { kind: 'table'; title: string; table: Table; notes?: string[] }
  | { kind: 'text'; text: string; notes?: string[] }
  | { kind: 'chart'; chart: BarChart };

/** One probe's part of a report: a heading and its blocks, charts first. */
export interface ReportSection {
  heading: string;
  blocks: ReportBlock[];
}

export const tableAsText = (t: Table): string => renderTable(t.headers, t.rows, t.align, { wrap: t.wrap });

/** Terminal text: tables and texts separated by blank lines, notes indented below; no charts. */
export function renderBlocksAsText(blocks: ReportBlock[]): string {
  return blocks
    .flatMap((block) => {
      if (block.kind === 'chart') return [];
      const head = block.kind === 'table' ? [block.title, tableAsText(block.table)] : [block.text];
      return [[...head, ...(block.notes ?? []).map((note) => `  ${note}`)].join('\n')];
    })
    .join('\n\n');
}
