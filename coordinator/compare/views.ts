// What a comparison report shows, apart from how: facts, tables and the before/after charts,
// built once and rendered as terminal text, Markdown and HTML (render.ts) with the run report's
// building blocks (coordinator/report/document.ts).
import {
  LISTED,
  LISTED_EVERY_QUANTITY_UP_TO_JOBS,
  type ComparedQuantity,
  type ComparedRun,
  type Difference,
  type RunComparison,
} from '../../contracts/comparison.js';
import { QUANTITIES, type QuantityId, type QuantityUnit } from '../../contracts/quantities.js';
import { FINDINGS } from '../../contracts/findings.js';
import type { BarChart, Table } from '../report/document.js';
import { formatCount, formatMs } from '../report/format.js';
import { variantText, worstFirst } from './compare-runs.js';
import { grossChangeFor } from './rules.js';

export function formatValue(value: number, unit: QuantityUnit): string {
  switch (unit) {
    case 'ms':
      return value < 0 ? `-${formatMs(-value)}` : formatMs(value);
    case 'bytes':
      return `${formatCount(value)} B`;
    case 'share':
      return `${(value * 100).toFixed(1)}%`;
    case 'per_second':
      return `${formatCount(value)}/s`;
  }
}

/** A change with its sign; shares in percentage points. */
export function formatChange(value: number, unit: QuantityUnit): string {
  const sign = value > 0 ? '+' : value < 0 ? '-' : '±';
  const size = Math.abs(value);
  return `${sign}${unit === 'share' ? `${(size * 100).toFixed(1)} pp` : formatValue(size, unit)}`;
}

/** The new run's own 95% interval. */
const intervalText = (q: ComparedQuantity) => {
  if (!q.afterCi95) return QUANTITIES[q.quantity].unit === 'per_second' ? 'measured once' : 'exact';
  const unit = QUANTITIES[q.quantity].unit;
  return `${formatValue(q.afterCi95[0], unit)} .. ${formatValue(q.afterCi95[1], unit)}`;
};

/** The baseline's median and, with enough history, the band night-to-night noise reaches. */
const baselineText = (q: ComparedQuantity) => {
  const unit = QUANTITIES[q.quantity].unit;
  const band = q.baseline.band;
  const spread = band ? `, ${formatValue(band[0], unit)} .. ${formatValue(band[1], unit)}` : '';
  return `${formatValue(q.baseline.median, unit)} (${runsText(q.baseline.values.length)}${spread})`;
};

const runsText = (n: number) => `${n} earlier run${n === 1 ? '' : 's'}`;

/** " (+12%)"; beyond ±999% the percentage says little ("44 ms from 0.04 ms"), so it is capped. */
const relativeText = (q: ComparedQuantity) => {
  if (q.relativeChange === null) return '';
  const percent = q.relativeChange * 100;
  if (Math.abs(percent) > 999) return percent > 0 ? ' (>+999%)' : ' (<-999%)';
  return ` (${percent > 0 ? '+' : ''}${percent.toFixed(0)}%)`;
};

/** Why the verdict is what it is, in the rule's words (docs/compare.md "The baseline rule"). */
export function reasonText(q: ComparedQuantity): string {
  const unit = QUANTITIES[q.quantity].unit;
  const minimum = formatValue(q.minChange, unit);
  const history = runsText(q.baseline.values.length);
  const upwards = q.change > 0;
  const gross = formatValue(grossChangeFor(q.quantity, q.baseline.median, upwards), unit);
  switch (q.reason) {
    case 'beyond-baseline':
      return `beyond baseline: outside its spread, and at least the minimum effect, ${minimum}`;
    case 'beyond-any-noise':
      return `beyond any plausible noise: ${history}, but ${gross} or more away`;
    case 'within-spread':
      return q.baseline.band ? 'within night-to-night spread' : "within the run's own noise";
    case 'below-minimum':
      return `below minimum effect, ${minimum}`;
    case 'too-little-history':
      return `${history}: not enough to judge (only ${gross} or more would count)`;
    case 'machine-busy':
      return "machine busy: the worker's own wait for a CPU during the job could have made this change";
  }
}

const runText = (run: ComparedRun) =>
  `${run.runId} (plan ${run.plan}, ${run.mode}, started ${run.startedAt}, regions ${run.regions.join(', ') || 'none'}; from ${run.source})`;

/** What a comparison of a big run leaves out of its lists, if anything. */
function omittedFact({ omitted }: RunComparison): [string, string][] {
  const left = [
    omitted.unchanged > 0 ? `${formatCount(omitted.unchanged)} unchanged quantities` : '',
    omitted.changed > 0
      ? `${formatCount(omitted.changed)} changed ones past the ${formatCount(LISTED.changed)} largest changes`
      : '',
    omitted.notCompared > 0
      ? `${formatCount(omitted.notCompared)} not compared past the first ${formatCount(LISTED.notCompared)}`
      : '',
  ].filter(Boolean);
  const why = `a run of over ${formatCount(LISTED_EVERY_QUANTITY_UP_TO_JOBS)} jobs lists what changed; the verdicts count all`;
  return left.length === 0 ? [] : [['not listed', `${left.join('; ')} (${why})`]];
}

export function comparisonFacts(c: RunComparison): [string, string][] {
  const s = c.summary;
  return [
    ['after', runText(c.after)],
    ['before', runText(c.before)],
    ['baseline', `${runsText(c.baseline.length)}, newest first: ${c.baseline.map((r) => r.runId).join(', ')}`],
    ['verdicts', `${s.regressed} regressed, ${s.improved} improved, ${s.unchanged} unchanged`],
    ['findings', `${s.findingsAppeared} appeared, ${s.findingsDisappeared} disappeared (since ${c.before.runId})`],
    ...omittedFact(c),
    [
      'rule',
      `regressed or improved when the run's 95% interval lies beyond the night-to-night spread of its ${c.method.minRuns} or ` +
        `more earlier runs (their median ± ${c.method.spreadK} scaled MADs, widened to every earlier value) and the change is ` +
        'at least the minimum effect; with fewer earlier runs, only when the value doubled or halved and moved ' +
        `${c.method.grossAbsoluteFactor} times the absolute minimum (docs/compare.md)`,
    ],
  ];
}

const where = (q: Pick<ComparedQuantity, 'region' | 'target' | 'probe' | 'variant'>) =>
  [q.region, q.target, q.probe, variantText(q.variant)].filter(Boolean).join(' ');

/** The regressed and improved quantities, worst first (largest relative change, then largest change). */
export function changedTable(c: RunComparison): Table {
  const changed = c.quantities.filter((q) => q.verdict !== 'unchanged').sort(worstFirst);
  return {
    headers: ['verdict', 'where', 'quantity', 'baseline', 'after', 'change', "after's 95% CI", 'why'],
    align: 'lllrrrrl',
    wrap: [0, 0, 0, 0, 0, 0, 0, 50],
    rows: changed.map((q) => {
      const unit = QUANTITIES[q.quantity].unit;
      return [
        q.verdict,
        where(q),
        QUANTITIES[q.quantity].label,
        baselineText(q),
        formatValue(q.after, unit),
        `${formatChange(q.change, unit)}${relativeText(q)}`,
        intervalText(q),
        reasonText(q),
      ];
    }),
  };
}

export function quantityTable(c: RunComparison): Table {
  return {
    headers: [
      'region',
      'target',
      'probe',
      'variant',
      'quantity',
      'baseline',
      'after',
      'change',
      "after's 95% CI",
      'verdict',
      'why',
    ],
    align: 'lllllrrrrll',
    wrap: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 50],
    rows: c.quantities.map((q) => {
      const unit = QUANTITIES[q.quantity].unit;
      return [
        q.region,
        q.target,
        q.probe,
        variantText(q.variant),
        QUANTITIES[q.quantity].label,
        baselineText(q),
        formatValue(q.after, unit),
        `${formatChange(q.change, unit)}${relativeText(q)}`,
        intervalText(q),
        q.verdict,
        reasonText(q),
      ];
    }),
  };
}

export function findingChangesTable(c: RunComparison): Table {
  return {
    headers: ['change', 'severity', 'finding', 'where', 'evidence (from the run that has it)'],
    align: 'lllll',
    rows: c.findings.map((f) => [
      f.change,
      f.severity,
      `${f.code}: ${FINDINGS[f.code].title}`,
      `${f.target} from ${f.region}`,
      f.evidence,
    ]),
    wrap: [0, 0, 40, 0, 60],
  };
}

const DIFFERENCE_LABELS: Record<Difference['kind'], string> = {
  plan: 'plan name',
  mode: 'run mode',
  region: 'region',
  target: 'target',
  'target-url': 'target URL',
  'target-settings': 'target headers or TLS settings',
  experiment: 'probe variants on the target',
  parameters: 'probe parameters',
};

export function differencesTable(c: RunComparison): Table {
  return {
    headers: ['what', 'where', 'before', 'after'],
    align: 'llll',
    rows: c.differences.map((d) => [DIFFERENCE_LABELS[d.kind], d.where, d.before ?? '(none)', d.after ?? '(none)']),
    wrap: [0, 0, 50, 50],
  };
}

export function notComparedTable(c: RunComparison): Table {
  return {
    headers: ['region', 'target', 'probe', 'variant', 'quantity', 'why not'],
    align: 'llllll',
    rows: c.notCompared.map((n) => [
      n.region,
      n.target,
      n.probe,
      variantText(n.variant),
      n.quantity ? QUANTITIES[n.quantity].label : '(the whole job)',
      n.reason,
    ]),
    wrap: [0, 0, 0, 0, 0, 70],
  };
}

/** The time quantities each region's chart shows: the headline ones, not every phase. */
const CHARTED: QuantityId[] = [
  'new_connection_cost',
  'phase_total_p50',
  'handshake_full_p50',
  'handshake_resumed_p50',
  'load_latency_p50',
  'load_latency_p99',
];

/** Regions in the order the comparison lists them. */
export const regionsOf = (c: RunComparison) => [...new Set(c.quantities.map((q) => q.region))];

/** Before and after of the headline times of one region: one group per job and quantity. */
export function beforeAfterChart(c: RunComparison, region: string): BarChart {
  const rows = c.quantities.filter((q) => q.region === region && CHARTED.includes(q.quantity));
  return {
    id: 'before-after',
    title: `Baseline and after, from ${region}`,
    description:
      "The headline times of each target and probe: the baseline's median and the new run's value for " +
      'new-connection cost, median request time, median TLS handshakes, load latency. The verdict beside the after bar follows the rule above.',
    unit: 'ms',
    groups: rows.map((q) => ({
      label: `${q.target} ${q.probe} ${variantText(q.variant)}: ${QUANTITIES[q.quantity].label}`,
      bars: [
        {
          label: 'baseline',
          series: 'before',
          value: q.baseline.median,
          text: formatValue(q.baseline.median, 'ms'),
        },
        {
          label: 'after',
          series: 'after',
          value: q.after,
          text: `${formatValue(q.after, 'ms')} (${formatChange(q.change, 'ms')}, ${q.verdict})`,
        },
      ],
    })),
  };
}
