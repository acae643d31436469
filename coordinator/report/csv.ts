// The run as CSV for a spreadsheet: one row per job and phase (the job's summary.phases, in
// phase order); a job without phases (a failed one, a cors job) and a job without a result
// (unfinishedJobs) get one row with the phase columns empty. RFC 4180: comma-separated, CRLF,
// fields quoted when they hold a comma, quote or line break. Numbers are the JSON's, unrounded.
// A text field that a spreadsheet would take for a formula (=, +, -, @, tab, CR first) gets a
// leading apostrophe, so a value a server sent cannot run as one.
import { PHASES } from '../../contracts/common.js';
import type { ProbeResult, RunInPages, RunReport } from '../../contracts/result.js';
import { shown } from './format.js';

/** The columns, in order; docs/reports.md says what each holds. */
export const CSV_COLUMNS = [
  'run_id',
  'job_id',
  'region',
  'target',
  'probe',
  'variant',
  'client',
  'status',
  'error_code',
  'error',
  'started_at',
  'requests',
  'errors',
  'connections_opened',
  'duration_ms',
  'phase',
  'p50_ms',
  'p95_ms',
  'p99_ms',
  'phase_samples',
  'threshold',
  'quantity',
  'value',
  'min',
  'max',
] as const;

type CsvRow = Partial<Record<(typeof CSV_COLUMNS)[number], string | number>>;

/** After CSV_COLUMNS, one column per label the plan declares (`targetLabels`): `label_team`. */
export const labelColumn = (label: string) => `label_${label}`;

/** `mode=reused scheme=https`: the variant's fields in their order. */
const variantField = (variant: Record<string, unknown>) =>
  Object.entries(variant)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(' ');

function csvField(value: string | number | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return String(value);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The run as CSV, whole. */
export function renderCsvReport(run: RunReport): string {
  const csv = csvOf(run);
  return [csv.header, ...csv.resultLines(run.results), ...csv.tailLines].join('');
}

/** The run as CSV a page of results at a time (a big run's parts, coordinator/run-parts.ts): the
 * same text as renderCsvReport, without the results held at once. */
export async function* csvText(run: RunInPages): AsyncGenerator<string> {
  const csv = csvOf(run.head);
  yield csv.header;
  for await (const page of run.pages()) yield csv.resultLines(page).join('');
  yield csv.tailLines.join('');
}

/** The CSV's pieces, each line ending in CRLF: its header, the rows of some results, and the rows
 * after every result's (jobs without one, threshold checks). */
function csvOf(run: Omit<RunReport, 'results'>) {
  const report = shown(run);
  // Each row's target labels, from the plan (a plan without targetLabels has no such column).
  const labels = report.plan.targetLabels ?? [];
  const labelsOf = new Map(report.plan.targets.map((t) => [t.name, t.labels ?? {}]));
  const labelFields = (row: CsvRow) =>
    labels.map((l) => csvField(row.target === undefined ? undefined : labelsOf.get(String(row.target))?.[l]));
  const line = (row: CsvRow) => `${[...CSV_COLUMNS.map((c) => csvField(row[c])), ...labelFields(row)].join(',')}\r\n`;

  const resultLines = (results: readonly ProbeResult[]): string[] => {
    const rows: CsvRow[] = [];
    for (const r of shown(results)) {
      const job: CsvRow = {
        run_id: r.runId,
        job_id: r.jobId,
        region: r.region,
        target: r.target,
        probe: r.probe,
        variant: variantField(r.variant),
        client: r.probe === 'reuse' ? r.details?.client?.label : undefined,
        status: r.error ? 'error' : 'ok',
        error_code: r.error?.code,
        error: r.error?.message,
        started_at: r.startedAt,
        requests: r.summary.requests,
        errors: r.summary.errors,
        connections_opened: r.summary.connectionsOpened,
        duration_ms: r.summary.durationMs,
      };
      const phases = PHASES.filter((p) => r.summary.phases[p]);
      if (phases.length === 0) rows.push(job);
      for (const phase of phases) {
        const p = r.summary.phases[phase]!;
        rows.push({ ...job, phase, p50_ms: p.p50, p95_ms: p.p95, p99_ms: p.p99, phase_samples: p.n });
      }
    }
    return rows.map(line);
  };

  const tail: CsvRow[] = [];
  for (const u of report.unfinishedJobs) {
    tail.push({
      run_id: report.runId,
      job_id: u.jobId,
      region: u.region,
      target: u.target,
      probe: u.probe,
      variant: variantField(u.variant),
      status: u.status,
      error: u.reason,
    });
  }
  for (const c of report.thresholds.checks)
    tail.push({
      run_id: report.runId,
      region: c.region,
      target: c.target,
      probe: c.probe,
      variant: variantField(c.variant),
      status: c.breached ? 'breached' : 'within',
      threshold: c.threshold,
      quantity: c.quantity,
      value: c.value,
      min: c.min ?? undefined,
      max: c.max ?? undefined,
    });
  return {
    header: `${[...CSV_COLUMNS, ...labels.map(labelColumn)].join(',')}\r\n`,
    resultLines,
    tailLines: tail.map(line),
  };
}
