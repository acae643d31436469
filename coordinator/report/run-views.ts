// The parts of a report about the run as a whole, shared by the text, Markdown and HTML reports:
// the new-connection cost per region and target, jobs that did not finish cleanly, findings and
// the decision table; and the probes' sections in report order.
import { FINDINGS } from '../../contracts/findings.js';
import { PROBE_KINDS, type ProbeKind } from '../../contracts/probes/index.js';
import {
  NOTABLE_RESULTS_KEPT,
  type Comparison,
  type ProbeResult,
  type ResultOf,
  type RunReport,
} from '../../contracts/result.js';
import { plural } from '../../common/plural.js';
import type { RunOutcome } from '../run-outcome.js';
import type { BarChart, ReportBlock, ReportSection, Table } from './document.js';
import { fewestValuesToShow, median } from '../../common/stats.js';
import { formatMs } from './format.js';
import { thresholdQuantitySpec } from '../../contracts/thresholds.js';
import { REPORT_VIEWS } from './views/index.js';
import { h3Advertisements } from '../analysis-alt-svc.js';

const interval = (ci: [number, number]) => `${formatMs(ci[0])} .. ${formatMs(ci[1])}`;

const TAIL_PERCENTILES = [95, 99] as const;

/** Whether the tail's p-th percentile is over enough new connections to mean its share (a p99 of
 * 20 is the slowest one); runs written before the count was kept show theirs. */
const tailShown = (c: Comparison, p: (typeof TAIL_PERCENTILES)[number]) => {
  const n = c.newConnectionCostTailMs?.n;
  return n === undefined || n >= fewestValuesToShow(p);
};

/** p95 or p99 of the time to open, or "-" when not measured or over too few connections. */
const tailCell = (c: Comparison, p: (typeof TAIL_PERCENTILES)[number]) =>
  tailShown(c, p) ? formatMs(c.newConnectionCostTailMs?.[`p${p}`]) : '-';

/** Under a table of tails: which were left out, and how many connections they would need. */
function tailNotes(comparisons: Comparison[]): string[] {
  const short = comparisons.filter((c) => TAIL_PERCENTILES.some((p) => !tailShown(c, p)));
  if (short.length === 0) return [];
  const need = TAIL_PERCENTILES.map((p) => `p${p} from ${fewestValuesToShow(p)}`).join(', ');
  const counts = new Set(short.map((c) => c.newConnectionCostTailMs!.n));
  const opened =
    counts.size === 1 && short.length === comparisons.length
      ? `${[...counts][0]} for each`
      : short.map((c) => `${c.target} (${c.region}) ${c.newConnectionCostTailMs!.n}`).join(', ');
  return [`the tail is shown from enough new connections to mean it (${need}); opened here: ${opened}`];
}

/** The cost and its interval, or "none" where the difference is no cost of a connection. */
const costCells = (c: Comparison): [string, string] =>
  c.noCostReason ? ['none', '-'] : [formatMs(c.newConnectionCostMs.median), interval(c.newConnectionCostMs.ci95)];

/** A label's value where a target has none. */
const NO_VALUE = '-';

/**
 * Per label the plan declares (`targetLabels`), per value: its targets, their jobs and how they
 * ended, and the median of their new-connection costs (every region's): where a plan of many
 * targets says whose targets cost what. None for a plan without labels.
 */
export function labelBlocks(report: RunReport): ReportBlock[] {
  const names = report.plan.targetLabels ?? [];
  if (names.length === 0) return [];
  const labelsOf = new Map(report.plan.targets.map((t) => [t.name, t.labels ?? {}]));
  return names.map((name) => {
    const rows = new Map<
      string,
      { targets: number; jobs: number; ok: number; errors: number; none: number; costs: number[] }
    >();
    const rowOf = (target: string) => {
      const value = labelsOf.get(target)?.[name] || NO_VALUE;
      const row = rows.get(value) ?? { targets: 0, jobs: 0, ok: 0, errors: 0, none: 0, costs: [] };
      rows.set(value, row);
      return row;
    };
    for (const t of report.plan.targets) rowOf(t.name).targets++;
    for (const r of report.results) {
      const row = rowOf(r.target);
      row.jobs++;
      if (r.ok) row.ok++;
      else row.errors++;
    }
    for (const u of report.unfinishedJobs) {
      const row = rowOf(u.target);
      row.jobs++;
      row.none++;
    }
    for (const c of report.comparisons) if (!c.noCostReason) rowOf(c.target).costs.push(c.newConnectionCostMs.median);
    const values = [...rows.keys()].sort((a, b) => (a === NO_VALUE ? 1 : b === NO_VALUE ? -1 : a.localeCompare(b)));
    const withCosts = report.comparisons.length > 0;
    return {
      kind: 'table' as const,
      title: `Targets by ${name}`,
      table: {
        headers: [
          name,
          'targets',
          'jobs',
          'ok',
          'target errors',
          'no result',
          ...(withCosts ? ['new-connection cost, median of targets'] : []),
        ],
        align: `lrrrrr${withCosts ? 'r' : ''}`,
        rows: values.map((value) => {
          const row = rows.get(value)!;
          return [
            value,
            String(row.targets),
            String(row.jobs),
            String(row.ok),
            String(row.errors),
            String(row.none),
            ...(withCosts ? [row.costs.length > 0 ? formatMs(median(row.costs)) : '-'] : []),
          ];
        }),
      },
      ...(rows.has(NO_VALUE) ? { notes: [`${NO_VALUE}: targets without a ${name} label`] } : {}),
    };
  });
}

/** The cost table, with a note under it for each target that has no cost, saying why. Beside
 * the cost, its tail: p95 and p99 of the time the new connections took to open. */
export function costBlock(report: RunReport): ReportBlock {
  return {
    kind: 'table',
    title:
      'New-connection cost = median(new) - median(reused), per request; its tail: p95 and p99 of the time new connections took to open (resolve + connect + TLS, and any proxy CONNECT)',
    table: {
      headers: [
        'region',
        'target',
        'scheme',
        'reused median',
        'new median',
        'new-connection cost',
        '95% CI',
        'p95 to open',
        'p99 to open',
      ],
      align: 'lllrrrrrr',
      rows: report.comparisons.map((c) => [
        c.region,
        c.target,
        c.scheme,
        formatMs(c.reusedMedianMs),
        formatMs(c.newMedianMs),
        ...costCells(c),
        tailCell(c, 95),
        tailCell(c, 99),
      ]),
    },
    notes: [
      ...report.comparisons
        .filter((c) => c.noCostReason)
        .map((c) => `${c.target} (${c.region}): no new-connection cost to show: ${c.noCostReason}`),
      ...tailNotes(report.comparisons),
    ],
  };
}

/** Regions that have a new-connection cost, in the plan's order (an embedded run's `local` last). */
export function comparedRegions(report: RunReport): string[] {
  return orderedRegions(report, report.comparisons);
}

/** The regions of these results, in the plan's order, any others after. */
export function orderedRegions(report: RunReport, placed: { region: string }[]): string[] {
  const rank = (region: string) =>
    report.plan.regions.includes(region) ? report.plan.regions.indexOf(region) : report.plan.regions.length;
  return [...new Set(placed.map((p) => p.region))].sort((a, b) => rank(a) - rank(b));
}

/** The title of costByRegionTable, as each renderer words it (− or -). */
export const costByRegionTitle = (minus: string) =>
  `New-connection cost per target and region: median(new) ${minus} median(reused) per request (95% CI); its tail: p95 and p99 of the time new connections took to open`;

/** Up to three rows per target, one column per region: the cost with its interval ("3.18 ms
 * (3.04 ms .. 3.29 ms)", or "none"), then its tail, p95 and p99; "-" where not measured or over
 * too few connections, and a tail's row left out where no region has it (the cost table's note says why). */
export function costByRegionTable(report: RunReport): Table {
  const regions = comparedRegions(report);
  const targets = [...new Set(report.comparisons.map((c) => c.target))];
  const cells: [string, (c: Comparison) => string][] = [
    [
      'median (95% CI)',
      (c) => {
        const [cost, ci] = costCells(c);
        return c.noCostReason ? cost : `${cost} (${ci})`;
      },
    ],
    ['p95 to open', (c) => tailCell(c, 95)],
    ['p99 to open', (c) => tailCell(c, 99)],
  ];
  return {
    headers: ['target', 'scheme', 'cost', ...regions],
    align: `lll${'r'.repeat(regions.length)}`,
    rows: targets.flatMap((target) => {
      const mine = report.comparisons.filter((c) => c.target === target);
      return cells.flatMap(([quantity, cell], i) => {
        const values = regions.map((region) => {
          const c = mine.find((m) => m.region === region);
          return c ? cell(c) : '-';
        });
        return i > 0 && values.every((v) => v === '-') ? [] : [[target, mine[0].scheme, quantity, ...values]];
      });
    }),
  };
}

/** One group per target, one bar per region with its 95% interval as a whisker. */
export function costChart(report: RunReport): BarChart {
  const regions = comparedRegions(report);
  const targets = [...new Set(report.comparisons.map((c) => c.target))];
  return {
    id: 'new-connection-cost',
    title: 'New-connection cost per region and target',
    description:
      'median(new) − median(reused) of the per-request time: what opening a connection adds to a request. ' +
      'The whisker is the 95% confidence interval (bootstrap). Targets with no cost to show (reused requests were ' +
      'the slower ones, or the server closes every connection) have no bar; the table says why.',
    unit: 'ms',
    groups: targets
      .map((target) => {
        const mine = report.comparisons.filter((c) => c.target === target);
        return {
          label: `${target} (${mine[0].scheme})`,
          bars: regions.flatMap((region) => {
            const c = mine.find((m) => m.region === region && !m.noCostReason);
            return c
              ? [
                  {
                    label: region,
                    series: region,
                    value: c.newConnectionCostMs.median,
                    interval: c.newConnectionCostMs.ci95,
                    text: `${formatMs(c.newConnectionCostMs.median)} (95% CI ${interval(c.newConnectionCostMs.ci95)})`,
                  },
                ]
              : [];
          }),
        };
      })
      .filter((group) => group.bars.length > 0),
  };
}

/** HTTP/3 as the targets advertised it in Alt-Svc; undefined when none did. */
export function h3Block(report: RunReport): ReportBlock | undefined {
  const ads = h3Advertisements(report.results);
  if (ads.length === 0) return undefined;
  return {
    kind: 'table',
    title: 'HTTP/3 advertised (Alt-Svc): where clients may try QUIC; probefleet does not measure it',
    table: {
      headers: ['region', 'target', 'protocol', 'host', 'port', 'max-age', 'seen by'],
      align: 'llllrrl',
      rows: ads.map((a) => [
        a.region,
        a.target,
        a.protocol,
        a.host || '(same host)',
        String(a.port),
        `${a.maxAgeSeconds} s`,
        a.probes.join(', '),
      ]),
    },
    notes: ['An HTTP/3 probe waits for a Node release that ships node:quic (docs/probes.md, "HTTP/3").'],
  };
}

const variantText = (variant: Record<string, unknown>) => Object.values(variant).join(' ');

/** Why a result came from a second take of its job, or undefined. */
export function retriedReason(result: ProbeResult): string | undefined {
  if (!result.workersLost) return undefined;
  const times = result.workersLost > 1 ? ` ${result.workersLost} times` : '';
  return `its worker was lost while running it${times} (its lock expired: killed, hung or cut off from Redis); taken again and measured whole by ${result.worker.host} (pid ${result.worker.pid})`;
}

/** Results with an error, results measured again after their worker was lost, and jobs without a result. */
export function unfinishedTable(report: RunReport): Table {
  return {
    headers: ['region', 'target', 'probe', 'variant', 'status', 'why'],
    align: 'llllll',
    rows: [
      ...report.results.flatMap((r) => {
        const why = retriedReason(r);
        return why ? [[r.region, r.target, r.probe, variantText(r.variant), 'retried', why]] : [];
      }),
      ...report.results
        .filter((r) => r.error)
        .map((r) => [
          r.region,
          r.target,
          r.probe,
          variantText(r.variant),
          r.ok ? 'partly measured' : 'failed',
          `${r.error!.code}: ${r.error!.message}`,
        ]),
      ...report.unfinishedJobs.map((u) => [
        u.region,
        u.target,
        u.probe,
        variantText(u.variant),
        u.status === 'failed' ? 'no result' : 'not run',
        u.reason,
      ]),
    ],
  };
}

/** `finding` is "CODE: title" (the catalogue's one line). */
export function findingsTable(report: RunReport): Table {
  return {
    headers: ['severity', 'finding', 'where', 'evidence from this run'],
    align: 'llll',
    rows: report.findings.map((f) => [
      f.severity,
      `${f.code}: ${FINDINGS[f.code].title}`,
      `${f.target} from ${f.region}`,
      f.evidence,
    ]),
  };
}

export const hasThresholds = (report: RunReport) =>
  report.thresholds.checks.length + report.thresholds.unchecked.length > 0;

/** The plan's thresholds against the run: every check (breached first), then what was not checked and why. */
export function thresholdsTable(report: RunReport): Table {
  const { checks, unchecked } = report.thresholds;
  const bound = (c: (typeof checks)[number]) =>
    [c.min !== null ? `>= ${c.min}` : '', c.max !== null ? `<= ${c.max}` : ''].filter(Boolean).join(' and ');
  const unit = (c: (typeof checks)[number]) => thresholdQuantitySpec(c.quantity).unit;
  const value = (c: (typeof checks)[number]) =>
    unit(c) === 'ms' ? formatMs(c.value) : unit(c) === 'share' ? `${(c.value * 100).toFixed(2)}%` : String(c.value);
  return {
    headers: ['', 'threshold', 'quantity', 'where', 'value', 'bound'],
    align: 'lllllr',
    rows: [
      ...[...checks]
        .sort((a, b) => Number(b.breached) - Number(a.breached))
        .map((c) => [
          c.breached ? 'breached' : 'ok',
          c.threshold,
          thresholdQuantitySpec(c.quantity).label,
          [c.region, c.target, c.probe, ...Object.values(c.variant).map(String)].join(' '),
          value(c),
          bound(c),
        ]),
      ...unchecked.map((u) => ['not checked', u.threshold, '', u.where, '', u.reason]),
    ],
    wrap: [0, 0, 0, 40, 0, 50],
  };
}

export function decisionTable(report: RunReport): Table {
  return {
    headers: ['situation', 'do this', 'numbers from this run'],
    align: 'lll',
    rows: report.decisions.map((d) => [d.situation, d.action, d.evidence]),
    wrap: [34, 44, 60],
  };
}

function probeSection<K extends ProbeKind>(kind: K, results: ProbeResult[]): ReportSection | undefined {
  const mine = results.filter((r): r is ResultOf<K> & ProbeResult => r.probe === kind);
  return mine.length > 0 ? (REPORT_VIEWS[kind] as (r: ResultOf<K>[]) => ReportSection)(mine) : undefined;
}

/** The sections of the probes this run has results of, in the order of the probe list. */
export function probeSections(report: RunReport): { kind: ProbeKind; section: ReportSection }[] {
  return PROBE_KINDS.flatMap((kind) => {
    const section = probeSection(kind, report.results);
    return section ? [{ kind, section }] : [];
  });
}

/** A run shown from its head, too big to show whole: how many results it has and what became of
 * its jobs (counted over its pages); the report it comes with holds only the notable results. */
export interface RunShownInPart {
  resultCount: number;
  outcome: RunOutcome;
}

/** What a report of a run too big to show whole says in place of the sections with a row per job. */
export function leftOutNote(resultCount: number): string {
  return `${plural(resultCount, 'result')}: the sections with a row per job are left out of a run this big; the run JSON (--json FILE) holds every result`;
}

/** Said under "Jobs that did not finish cleanly" when the head kept only the first notable results. */
export function notableKeptNote(report: RunReport): string | undefined {
  return report.results.length >= NOTABLE_RESULTS_KEPT
    ? `the first ${NOTABLE_RESULTS_KEPT} results with an error or a lost worker; the run JSON holds every one`
    : undefined;
}
