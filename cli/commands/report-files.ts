// --html, --markdown and --csv: the options every command that has a run report shares (run,
// runs show, regions run, report), and the one place that writes report files (compare's too).
// "-" is stdout (`--markdown -` and `--markdown=-` alike: cli/options/args.ts joins the first
// into the second).
import type { Argv } from 'yargs';
import { printableJsonText } from '../../common/printable.js';
import { removeUnfinishedWrites, writeFileAtomic } from '../../common/write-file-atomic.js';
import { EXIT_INTERRUPTED } from '../exit-codes.js';
import type { RunReport, RunReportHead } from '../../contracts/result.js';
import { csvText, renderCsvReport } from '../../coordinator/report/csv.js';
import { renderRunReport, renderRunSummary } from '../../coordinator/report/text.js';
import { isWhole, outcomeOfParts, runJsonText, type RunParts, wholeReport } from '../../coordinator/run-parts.js';
import { renderHtmlReport, renderHtmlSummary } from '../../coordinator/report/html.js';
import { renderMarkdownReport, renderMarkdownSummary } from '../../coordinator/report/markdown.js';

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

/** Writes each asked-for format, in the renderers' order (atomically: a reader never sees half a
 * file); `written` hears of each as it is done. */
export async function writeRenderedFiles<T, F extends string>(
  value: T,
  files: Partial<Record<F, string>>,
  renderers: Record<F, (value: T) => string>,
  written: (format: F) => void = () => {},
): Promise<void> {
  for (const format of Object.keys(renderers) as F[]) {
    const file = files[format];
    if (!file) continue;
    const content = renderers[format](value);
    if (file === '-') process.stdout.write(content);
    else await writeFileAtomic(file, content);
    written(format);
  }
}

export const writeReportFiles = (
  report: RunReport,
  files: ReportFiles,
  written?: (format: keyof ReportFiles) => void,
) => writeRenderedFiles(report, files, RENDERERS, written);

/** Whether any report file was asked for. */
export const wantsReportFiles = (files: ReportFiles) => Object.values(files).some(Boolean);

/**
 * The run's report: the text on stdout, then each file asked for. A format asked for on stdout
 * (`--json -`) takes stdout alone, so what reads it (jq, a browser) gets one document: the text
 * then goes to stderr, where a person still sees it.
 */
export async function printRunReport(
  report: RunReport,
  files: ReportFiles,
  written?: (format: keyof ReportFiles) => void,
): Promise<void> {
  const text = renderRunReport(report);
  if (Object.values(files).includes('-')) process.stderr.write(text);
  else process.stdout.write(text);
  await writeReportFiles(report, files, written);
}

/** Text to stdout a piece at a time, waiting for it to drain (a big run's JSON is hundreds of MB). */
async function writeToStdout(pieces: AsyncIterable<string>): Promise<void> {
  for await (const piece of pieces)
    if (!process.stdout.write(piece)) await new Promise((resolve) => process.stdout.once('drain', resolve));
}

/** Text made a piece at a time to a file (- for stdout). */
async function writePieces(file: string, pieces: AsyncIterable<string>): Promise<void> {
  if (file === '-') await writeToStdout(pieces);
  else await writeFileAtomic(file, pieces);
}

/** The run JSON (`probefleet.run/v1`) to a file (- for stdout), written a page of results at a time. */
export const writeRunJson = (run: RunParts, file: string) => writePieces(file, runJsonText(run));

/**
 * writeReportFiles for a run as its parts (coordinator/run-parts.ts): a run small enough from its
 * whole report; for a bigger one the JSON and CSV are written a page at a time, and HTML and
 * Markdown show what its head holds (the sections with a row per job left out, as the text does),
 * so the process never holds its results.
 */
export async function writeRunFiles(
  run: RunParts,
  files: ReportFiles,
  written: (format: keyof ReportFiles) => void = () => {},
): Promise<void> {
  if (isWhole(run)) return writeReportFiles(await wholeReport(run), files, written);
  if (files.json) {
    await writeRunJson(run, files.json);
    written('json');
  }
  const pages = { html: files.html, markdown: files.markdown };
  if (wantsReportFiles(pages)) {
    const outcome = await outcomeOfParts(run);
    const summaries = {
      html: (head: RunReportHead) => renderHtmlSummary(head, outcome),
      markdown: (head: RunReportHead) => renderMarkdownSummary(head, outcome),
    };
    await writeRenderedFiles<RunReportHead, 'html' | 'markdown'>(run.head, pages, summaries, written);
  }
  if (files.csv) {
    await writePieces(files.csv, csvText(run));
    written('csv');
  }
}

/** printRunReport for a run as its parts: a big run's text is its head's summary (writeRunFiles). */
export async function printRunParts(
  run: RunParts,
  files: ReportFiles,
  written?: (format: keyof ReportFiles) => void,
): Promise<void> {
  if (isWhole(run)) return printRunReport(await wholeReport(run), files, written);
  const text = renderRunSummary(run.head);
  if (Object.values(files).includes('-')) process.stderr.write(text);
  else process.stdout.write(text);
  await writeRunFiles(run, files, written);
}

/**
 * Ctrl-C for a command that ends by writing report files: the first stops the work (`stop`,
 * saying `stopping` when given) and the report is still printed and written; a second quits at
 * once, saying which of the files asked for were not written (never silently without them).
 * `written` is told of each file as it is done. The handler stays until the process ends: a
 * Ctrl-C after the files are written still ends it with EXIT_INTERRUPTED, not by the signal.
 */
export function interruptible(stop: AbortController, files: ReportFiles, stopping?: string) {
  const pending = new Set(
    (Object.keys(files) as (keyof ReportFiles)[]).filter((format) => files[format] && files[format] !== '-'),
  );
  const onSigint = () => {
    if (!stop.signal.aborted) {
      stop.abort();
      if (stopping) process.stderr.write(`${stopping} (Ctrl-C again to quit at once without it)\n`);
      return;
    }
    const notWritten = [...pending].map((format) => `--${format} ${files[format]}`);
    process.stderr.write(
      `second Ctrl-C: quitting at once${notWritten.length > 0 ? `; not written: ${notWritten.join(', ')}` : ''}\n`,
    );
    removeUnfinishedWrites();
    process.exit(EXIT_INTERRUPTED);
  };
  process.on('SIGINT', onSigint);
  return { written: (format: keyof ReportFiles) => pending.delete(format) };
}
