// The HTML report's one style sheet, inlined in every report: system fonts only, colours as
// custom properties with a dark set under prefers-color-scheme. Series colours are the
// Okabe-Ito palette, told apart with the common colour-vision deficiencies; every bar also has
// a text label, so colour is never the only cue.
import { SERIES_COLOURS } from './svg-chart.js';

export const REPORT_CSS = `
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --border: #d0d7de; --surface: #f6f8fa; --grid: #e3e7eb;
  --info: #0b5cad; --warning: #8a5300; --critical: #b3261e; --good: #1a7f37;
  --series-0: #0072b2; --series-1: #e69f00; --series-2: #009e73; --series-3: #cc79a7; --series-4: #56b4e9; --series-5: #d55e00;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #111418; --fg: #e6edf3; --muted: #9aa5b1; --border: #30363d; --surface: #181c22; --grid: #262c34;
    --info: #79b8ff; --warning: #f0b450; --critical: #ff8a80; --good: #56d364;
    --series-0: #56b4e9; --series-1: #f0b040; --series-2: #34c09a; --series-3: #e096c0; --series-4: #9fd4f5; --series-5: #f07a3a;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header, main, footer { max-width: 75rem; margin: 0 auto; padding: 0 1.25rem; }
header { padding-top: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 0.25rem; }
h2 { font-size: 1.3rem; margin: 2.5rem 0 0.75rem; padding-bottom: 0.25rem; border-bottom: 1px solid var(--border); }
h3 { font-size: 1rem; margin: 1.5rem 0 0.5rem; }
p { margin: 0.5rem 0; }
.muted, figcaption span, footer { color: var(--muted); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; overflow-wrap: anywhere; }
nav ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; list-style: none; padding: 0; margin: 0.75rem 0 0; }
a { color: var(--info); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; margin: 1rem 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.table-scroll { overflow-x: auto; margin: 0.5rem 0 1rem; }
table { border-collapse: collapse; font-size: 0.875rem; }
caption { text-align: left; font-weight: 600; padding: 0.25rem 0 0.5rem; caption-side: top; }
th, td { padding: 0.3rem 0.6rem; border-bottom: 1px solid var(--border); text-align: left; vertical-align: top; white-space: nowrap; }
th { background: var(--surface); font-weight: 600; white-space: normal; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.wide { min-width: 16rem; white-space: normal; }
td.breaks { min-width: 6rem; white-space: normal; overflow-wrap: anywhere; }
ul.notes { margin: 0 0 1rem; padding-left: 1.25rem; color: var(--muted); font-size: 0.875rem; }
figure.chart { margin: 1rem 0 1.5rem; padding: 0.75rem 1rem; background: var(--surface); border: 1px solid var(--border); border-radius: 6px; }
figcaption { margin-bottom: 0.5rem; }
figcaption strong { display: block; }
svg.chart { display: block; width: 100%; max-width: 960px; height: auto; }
svg.chart text { fill: var(--fg); font: 12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
svg.chart .group-label { font-weight: 600; }
svg.chart .tick-label { fill: var(--muted); font-size: 11px; }
svg.chart .grid { stroke: var(--grid); }
svg.chart .zero { stroke: var(--muted); }
svg.chart .interval line { stroke: var(--fg); stroke-width: 1.5; }
${Array.from({ length: SERIES_COLOURS }, (_, i) => `svg.chart .series-${i} { fill: var(--series-${i}); }`).join('\n')}
.badge { display: inline-block; padding: 0 0.45rem; border-radius: 999px; border: 1px solid currentColor; font-size: 0.8rem; font-weight: 600; white-space: nowrap; }
.badge-info { color: var(--info); }
.badge-warning { color: var(--warning); }
.badge-critical, .badge-regressed { color: var(--critical); }
.badge-improved { color: var(--good); }
.badge-unchanged { color: var(--muted); }
footer { margin-top: 3rem; padding-bottom: 2rem; font-size: 0.8rem; }
`;
