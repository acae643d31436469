// `probefleet report RUN.json`: a saved run (from `run --json`) as HTML, Markdown or CSV files,
// or as the terminal report when no file is asked for. A file that is not a valid
// `probefleet.run/v1` document is bad input: every problem names the file and field, exit 2.
import type { CommandModule } from 'yargs';
import type { Argv } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { readRunFile, RunFileError } from '../../coordinator/report/run-file.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { reportFileArgs, wantsReportFiles, writeReportFiles } from './report-files.js';
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
    let report;
    try {
      report = await readRunFile(args.file);
    } catch (err) {
      if (!(err instanceof RunFileError)) throw err;
      process.stderr.write(`probefleet: ${err.message}\n`);
      process.exitCode = EXIT_BAD_INPUT;
      return;
    }
    const files = { html: args.html, markdown: args.markdown, csv: args.csv };
    if (wantsReportFiles(files)) await writeReportFiles(report, files);
    else process.stdout.write(renderRunReport(report));
  },
};
