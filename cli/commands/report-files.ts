// --html, --markdown and --csv: the options every command that has a run report shares (run,
// runs show, regions run, report), and the one place that writes report files (compare's too).
// "-" is stdout (`--markdown -` and `--markdown=-` alike: args.ts joins the first into the second).
import type { Argv } from 'yargs';
import { printableJsonText } from '../../common/printable.js';
import { writeFileAtomic } from '../../common/write-file-atomic.js';
import type { RunReport } from '../../contracts/result.js';
import { renderCsvReport } from '../../coordinator/report/csv.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { renderHtmlReport } from '../../coordinator/report/html.js';
import { renderMarkdownReport } from '../../coordinator/report/markdown.js';

export const reportFileArgs = <T>(y: Argv<T>) =>
  y
    .option('html', {
      type: 'string',
      describe:
        'write the report as one self-contained HTML page with charts (opens offline) to this file (- for stdout)',
    })
    .option('markdown', {
      type: 'string',
      describe: 'write the report as Markdown tables (for a pull request or wiki) to this file (- for stdout)',
    })
    .option('csv', {
      type: 'string',
      describe: 'write one CSV row per job and phase to this file (- for stdout)',
    });

export interface ReportFiles {
  /** The run itself, `probefleet.run/v1`. */
  json?: string;
  html?: string;
  markdown?: string;
  csv?: string;
}

const RENDERERS: Record<keyof ReportFiles, (report: RunReport) => string> = {
  json: (report) => `${printableJsonText(report, 2)}\n`,
  html: renderHtmlReport,
  markdown: renderMarkdownReport,
  csv: renderCsvReport,
};

/** Writes each asked-for format, in the renderers' order (atomically: a reader never sees half a file). */
export async function writeRenderedFiles<T, F extends string>(
  value: T,
  files: Partial<Record<F, string>>,
  renderers: Record<F, (value: T) => string>,
): Promise<void> {
  for (const format of Object.keys(renderers) as F[]) {
    const file = files[format];
    if (!file) continue;
    const content = renderers[format](value);
    if (file === '-') process.stdout.write(content);
    else await writeFileAtomic(file, content);
  }
}

export const writeReportFiles = (report: RunReport, files: ReportFiles) => writeRenderedFiles(report, files, RENDERERS);

/** Whether any report file was asked for. */
export const wantsReportFiles = (files: ReportFiles) => Object.values(files).some(Boolean);

/**
 * The run's report: the text on stdout, then each file asked for. A format asked for on stdout
 * (`--json -`) takes stdout alone, so what reads it (jq, a browser) gets one document: the text
 * then goes to stderr, where a person still sees it.
 */
export async function printRunReport(report: RunReport, files: ReportFiles): Promise<void> {
  const text = renderRunReport(report);
  if (Object.values(files).includes('-')) process.stderr.write(text);
  else process.stdout.write(text);
  await writeReportFiles(report, files);
}
