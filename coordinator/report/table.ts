// Plain-text tables for the terminal, with optional word wrap per column. Cells are shown with
// control characters escaped (common/printable.ts): a table may hold what a target or Redis sent.
import { printable } from '../../common/printable.js';

function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  lines.push(line);
  return lines;
}

/** `align` has one letter per column: l(eft) or r(ight). */
export function renderTable(
  headers: string[],
  rows: string[][],
  align: string,
  options: { wrap?: number[] } = {},
): string {
  const wrapped = rows.map((row) =>
    row.map(printable).map((cell, i) => (options.wrap?.[i] ? wrapText(cell, options.wrap[i]) : [cell])),
  );
  const widths = headers.map((h, i) =>
    Math.max(h.length, ...wrapped.map((row) => Math.max(...row[i].map((l) => l.length)))),
  );
  const pad = (cell: string, i: number) => (align[i] === 'r' ? cell.padStart(widths[i]) : cell.padEnd(widths[i]));
  const line = (cells: string[]) => `  ${cells.map(pad).join('  ')}`.trimEnd();
  const out = [line(headers), line(widths.map((w) => '-'.repeat(w)))];
  for (const row of wrapped) {
    const height = Math.max(...row.map((c) => c.length));
    for (let j = 0; j < height; j++) out.push(line(row.map((c) => c[j] ?? '')));
  }
  return out.join('\n');
}
