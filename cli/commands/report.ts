// `probefleet report RUN.json`: a saved run (from `run --json`) as HTML, Markdown or CSV files,
// or as the terminal report when no file is asked for. A file that is not a valid
// `probefleet.run/v1` document is bad input: every problem names the file and field, exit 2. The
// file is read in parts, as a stored run is shown: a run of over 10,000 results as its summary, its
// CSV a page at a time.
import type { CommandModule } from 'yargs';
import type { Argv } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { readRunFileParts, RunFileError } from '../../coordinator/report/run-file.js';
import { renderRunReport, renderRunSummary } from '../../coordinator/report/text.js';
import { isWhole, wholeReport } from '../../coordinator/run-parts.js';
import { reportFileArgs, wantsReportFiles, writeRunFiles } from './report-files.js';
import { EXIT_BAD_INPUT } from '../exit-codes.js';

const options = (y: Argv) =>
  reportFileArgs(y).positional('file', {
    type: 'string',
    demandOption: true,
    describe: 'a run JSON (probefleet.run/v1), as written by run --json',
  });

export const reportCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'report <file>',
  describe:
    'Turn a saved run (run --json) into an HTML page with charts, Markdown or CSV; without options, print the report',
  builder: options,
  handler: async (args) => {
    const files = { html: args.html, markdown: args.markdown, csv: args.csv };
    try {
      const run = await readRunFileParts(args.file);
      if (wantsReportFiles(files)) await writeRunFiles(run, files);
      else process.stdout.write(isWhole(run) ? renderRunReport(await wholeReport(run)) : renderRunSummary(run.head));
    } catch (err) {
      if (!(err instanceof RunFileError)) throw err;
      process.stderr.write(`probefleet: ${err.message}\n`);
      process.exitCode = EXIT_BAD_INPUT;
    }
  },
};
