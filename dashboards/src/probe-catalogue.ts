// docs/catalogue.md: the probe table and the findings table, generated from the probes'
// contracts (contracts/probes/) and the findings catalogue (contracts/findings.ts), so a new
// probe or finding reaches the docs without a hand-written row.
import { FINDINGS, FINDING_CODES } from '../../contracts/findings.js';
import { PROBE_KINDS, PROBES } from '../../contracts/probes/index.js';

/** A table cell: pipes escaped, one line. */
const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

export function probeCatalogueMarkdown(note: string): string {
  const probes = PROBE_KINDS.map((kind) => {
    const p = PROBES[kind];
    const schemes = 'schemes' in p && p.schemes ? p.schemes.join(', ') : 'http, https';
    return `| \`${kind}\` | ${cell(p.question)} | ${cell(p.jobs)} | ${schemes} |`;
  });
  const findings = FINDING_CODES.map((code) => {
    const f = FINDINGS[code];
    const source = f.source === 'run analysis' ? 'run analysis' : `\`${f.source}\``;
    return `| \`${code}\` | ${source} | ${f.severity} | ${cell(f.when)} |`;
  });
  return [
    '# Probes and findings',
    '',
    `<!-- ${note} -->`,
    '',
    "Generated from the probes' contracts (`contracts/probes/`) and the findings catalogue",
    '(`contracts/findings.ts`). How each probe measures, its parameters and real output:',
    '[probes.md](probes.md). What a report shows for a finding (its situation and advice): the',
    'decision table, [reports.md](reports.md).',
    '',
    '## Probes',
    '',
    '| probe | question | jobs per target | target schemes |',
    '|---|---|---|---|',
    ...probes,
    '',
    '## Findings',
    '',
    "A probe's own findings come from its rules on one job's result (`worker/probes/<kind>-findings.ts`);",
    "the run analysis's from rules over the run's results (`coordinator/analysis*.ts`).",
    '',
    '| code | from | severity | when |',
    '|---|---|---|---|',
    ...findings,
    '',
  ].join('\n');
}
