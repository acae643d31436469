// The run report as terminal text: one section per probe, the new-connection cost per region
// and target, jobs that failed, findings with evidence, and the decision table. With more than
// one region the headline is the new-connection cost per target, one column per region.
import { PROBE_KINDS, type ProbeKind } from '../../contracts/probes/index.js';
import type { ProbeResult, ResultOf, RunReport } from '../../contracts/result.js';
import { formatMs } from './format.js';
import { REPORT_SECTIONS } from './sections/index.js';
import { renderTable } from './table.js';

function costTable(report: RunReport): string {
  return renderTable(
    ['region', 'target', 'scheme', 'reused median', 'new median', 'new-connection cost', '95% CI'],
    report.comparisons.map((c) => [
      c.region,
      c.target,
      c.scheme,
      formatMs(c.reusedMedianMs),
      formatMs(c.newMedianMs),
      formatMs(c.newConnectionCostMs.median),
      `${formatMs(c.newConnectionCostMs.ci95[0])} .. ${formatMs(c.newConnectionCostMs.ci95[1])}`,
    ]),
    'lllrrrr',
  );
}

/** Target rows, one column per region: "3.18 ms (3.04 .. 3.29)", "-" where not measured. */
function costByRegionTable(report: RunReport, regions: string[]): string {
  const targets = [...new Set(report.comparisons.map((c) => c.target))];
  return renderTable(
    ['target', 'scheme', ...regions],
    targets.map((target) => {
      const mine = report.comparisons.filter((c) => c.target === target);
      return [
        target,
        mine[0].scheme,
        ...regions.map((region) => {
          const c = mine.find((m) => m.region === region);
          return c
            ? `${formatMs(c.newConnectionCostMs.median)} (${formatMs(c.newConnectionCostMs.ci95[0])} .. ${formatMs(c.newConnectionCostMs.ci95[1])})`
            : '-';
        }),
      ];
    }),
    `ll${'r'.repeat(regions.length)}`,
  );
}

function section<K extends ProbeKind>(kind: K, results: ProbeResult[]): string | undefined {
  const mine = results.filter((r): r is ResultOf<K> & ProbeResult => r.probe === kind);
  return mine.length > 0 ? (REPORT_SECTIONS[kind] as (r: ResultOf<K>[]) => string)(mine) : undefined;
}

export function renderRunReport(report: RunReport): string {
  const jobs = report.results.length + report.unfinishedJobs.length;
  const out: string[] = [`run ${report.runId} (${report.mode}), plan ${report.plan.name}, ${jobs} jobs${report.mode === 'distributed' ? `, regions ${report.plan.regions.join(', ')}` : ''}`];
  const comparedRegions = report.plan.regions.filter((region) => report.comparisons.some((c) => c.region === region));
  if (comparedRegions.length > 1) {
    out.push('', 'New-connection cost per target and region: median(new) - median(reused) per request (95% CI)', costByRegionTable(report, comparedRegions));
  }
  for (const kind of PROBE_KINDS) {
    const text = section(kind, report.results);
    if (text) out.push('', text);
  }
  if (report.comparisons.length > 0) {
    out.push('', 'New-connection cost = median(new) - median(reused), per request', costTable(report));
  }
  const failed = report.results.filter((r) => r.error);
  if (failed.length > 0 || report.unfinishedJobs.length > 0) {
    out.push('', 'Jobs that did not finish cleanly');
    for (const r of failed) out.push(`  ${r.region} ${r.target} ${r.probe} ${Object.values(r.variant).join(' ')}: ${r.error?.code} ${r.error?.message}`);
    for (const u of report.unfinishedJobs) {
      out.push(`  ${u.region} ${u.target} ${u.probe} ${Object.values(u.variant).join(' ')}: ${u.status === 'failed' ? 'FAILED' : 'NOT RUN'} ${u.reason}`);
    }
  }
  if (report.findings.length > 0) {
    out.push('', 'Findings');
    for (const f of report.findings) out.push(`  [${f.severity}] ${f.code} (${f.target}, ${f.region}): ${f.evidence}`);
  }
  if (report.decisions.length > 0) {
    out.push(
      '',
      'Decision table',
      renderTable(
        ['situation', 'do this', 'numbers from this run'],
        report.decisions.map((d) => [d.situation, d.action, d.evidence]),
        'lll',
        { wrap: [34, 44, 60] },
      ),
    );
  }
  return `${out.join('\n')}\n`;
}
