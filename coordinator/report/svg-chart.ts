// A horizontal bar chart as inline SVG, written by hand: no library, no script, no fonts to
// fetch. Each bar has its label on the left and its value (with unit) as text on the right, so
// nothing depends on colour or hovering; the SVG is an image to assistive technology, named by
// its <title> and described, every number included, by its <desc>. Colours come from the page's
// style sheet (classes series-0..5), so the chart follows light and dark mode.
import type { BarChart } from './document.js';
import { html, type Html } from './html-template.js';

const WIDTH = 880;
/** Bar labels end here (right-aligned); bars start here. */
const LABEL_WIDTH = 190;
/** Room right of the longest bar for its value text. */
const TEXT_WIDTH = 270;
const BAR_HEIGHT = 16;
const ROW = 22;
const GROUP_HEADING = 24;
const AXIS_HEIGHT = 26;
const TOP = 6;
/** A generous average width of a 12 px system-ui character: SVG cannot measure text when it is written. */
const CHAR_WIDTH = 7;
export const SERIES_COLOURS = 6;

/** 1, 2 or 5 times a power of ten: about `span / 4`. */
function niceStep(span: number): number {
  const raw = span / 4;
  const power = 10 ** Math.floor(Math.log10(raw));
  const m = raw / power;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * power;
}

function tickLabel(value: number, step: number, unit: BarChart['unit']): string {
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  const number = value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  return unit === 'ms' ? `${number} ms` : unit === 'bytes' ? `${number} B` : number;
}

/** The axis spans zero and every value and interval, widened to whole ticks. */
function axis(chart: BarChart): { min: number; max: number; step: number } {
  const values = chart.groups.flatMap((g) => g.bars.flatMap((b) => [b.value, ...(b.interval ?? [])]));
  let min = Math.min(0, ...values);
  let max = Math.max(0, ...values);
  if (max - min === 0) max = 1;
  // Bytes and counts are whole numbers: no tick between 0 and 1.
  const step = chart.unit === 'ms' ? niceStep(max - min) : Math.max(1, niceStep(max - min));
  // The tolerance keeps a value a rounding error past a tick from adding a tick of its own.
  min = Math.floor(min / step + 1e-9) * step;
  max = Math.ceil(max / step - 1e-9) * step;
  return { min, max, step };
}

/** The sentence a screen reader hears: the description, then every bar's label and value. */
export function chartDescription(chart: BarChart): string {
  const groups = chart.groups
    .filter((g) => g.bars.length > 0)
    .map((g) => `${g.label}: ${g.bars.map((b) => `${b.label} ${b.text}`).join('; ')}.`);
  return [chart.description, ...groups].join(' ');
}

const round = (n: number) => Math.round(n * 10) / 10;

/** `elementId` must be unique in the page: it ties the SVG to its title and description. */
export function renderBarChart(chart: BarChart, elementId: string): Html {
  const { min, max, step } = axis(chart);
  const plotWidth = WIDTH - LABEL_WIDTH - TEXT_WIDTH;
  const x = (v: number) => round(LABEL_WIDTH + ((v - min) / (max - min)) * plotWidth);
  const seriesIndex = new Map<string, number>();
  const colour = (series: string) => {
    if (!seriesIndex.has(series)) seriesIndex.set(series, seriesIndex.size % SERIES_COLOURS);
    return `series-${seriesIndex.get(series)}`;
  };

  let y = TOP;
  /** Where the longest value text ends: the drawing widens to it rather than cut a text off. */
  let right = WIDTH;
  const groups: Html[] = [];
  for (const group of chart.groups) {
    if (group.bars.length === 0) continue;
    const heading = html`<text class="group-label" x="0" y="${y + 16}">${group.label}</text>`;
    y += GROUP_HEADING;
    const bars = group.bars.map((bar) => {
      const top = y;
      y += ROW;
      const mid = round(top + BAR_HEIGHT / 2);
      const left = Math.min(x(0), x(bar.value));
      const whisker = bar.interval
        ? html`<g class="interval"><line x1="${x(bar.interval[0])}" x2="${x(bar.interval[1])}" y1="${mid}" y2="${mid}"/><line x1="${x(bar.interval[0])}" x2="${x(bar.interval[0])}" y1="${top + 3}" y2="${top + BAR_HEIGHT - 3}"/><line x1="${x(bar.interval[1])}" x2="${x(bar.interval[1])}" y1="${top + 3}" y2="${top + BAR_HEIGHT - 3}"/></g>`
        : null;
      const textX = Math.max(x(0), x(bar.value), ...(bar.interval ? [x(bar.interval[1])] : [])) + 6;
      right = Math.max(right, Math.ceil(textX + bar.text.length * CHAR_WIDTH));
      return html`<g class="bar-row"><text class="bar-label" x="${LABEL_WIDTH - 8}" y="${mid + 4}" text-anchor="end">${bar.label}</text><rect class="bar ${colour(bar.series)}" x="${left}" y="${top}" width="${round(Math.abs(x(bar.value) - x(0)))}" height="${BAR_HEIGHT}" rx="2"/>${whisker}<text class="value-label" x="${textX}" y="${mid + 4}">${bar.text}</text></g>`;
    });
    groups.push(html`<g class="group">${heading}${bars}</g>`);
  }

  const plotBottom = y;
  const height = plotBottom + AXIS_HEIGHT;
  const ticks: Html[] = [];
  for (let i = 0; min + i * step <= max + step * 1e-9; i++) {
    const value = min + i * step;
    ticks.push(
      html`<line class="${Math.abs(value) < step * 1e-9 ? 'zero' : 'grid'}" x1="${x(value)}" x2="${x(value)}" y1="${TOP}" y2="${plotBottom}"/><text class="tick-label" x="${x(value)}" y="${plotBottom + 16}" text-anchor="middle">${tickLabel(value, step, chart.unit)}</text>`,
    );
  }
  return html`<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="${chart.id}" viewBox="0 0 ${right} ${height}" role="img" aria-labelledby="${elementId}-title ${elementId}-desc"><title id="${elementId}-title">${chart.title}</title><desc id="${elementId}-desc">${chartDescription(chart)}</desc><g class="axis">${ticks}</g>${groups}</svg>`;
}
