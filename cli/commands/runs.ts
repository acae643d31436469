// `probefleet runs list|show`: the run reports stored in Redis (by the coordinator, or by the
// `run` command that waited for its run).
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { commandLogger } from '../../common/log.js';
import { renderRunReport, renderRunSummary } from '../../coordinator/report/text.js';
import { isWhole, wholeReport } from '../../coordinator/run-parts.js';
import { renderTable } from '../../coordinator/report/table.js';
import { redisArgs, redisTimeoutArg } from '../options/redis.js';
import { withFleetClient } from '../options/fleet.js';
import { printableJsonText } from '../../common/printable.js';
import { reportFileArgs, wantsReportFiles, writeRunFiles, writeRunJson } from './report-files.js';

const listOptions = (y: Argv) =>
  redisTimeoutArg(redisArgs(y))
    .option('limit', { type: 'number', default: 20, describe: 'show the newest N runs' })
    .option('json', { type: 'boolean', describe: 'print the summaries as JSON' });
const showOptions = (y: Argv) =>
  reportFileArgs(redisTimeoutArg(redisArgs(y)))
    .positional('id', { type: 'string', demandOption: true, describe: 'run id (see: probefleet runs list)' })
    .option('json', { type: 'boolean', describe: 'print the whole run (probefleet.run/v1) as JSON' });

const log = commandLogger('runs');

const list: CommandModule<object, ArgsOf<typeof listOptions>> = {
  command: 'list',
  describe: 'List stored runs, newest first',
  builder: listOptions,
  handler: async (args) => {
    const runs = await withFleetClient(args, log, (fleet) => fleet.store.list(Math.max(1, Math.floor(args.limit))));
    if (args.json) {
      process.stdout.write(`${printableJsonText(runs, 2)}\n`);
    } else if (runs.length === 0) {
      process.stdout.write('no stored runs\n');
    } else {
      const seconds = (r: (typeof runs)[number]) =>
        `${((Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 1000).toFixed(1)} s`;
      process.stdout.write(
        `${renderTable(
          [
            'run',
            'mode',
            'started (UTC)',
            'took',
            'regions',
            'jobs',
            'ok',
            'target errors',
            'failed',
            'not run',
            'findings',
          ],
          runs.map((r) => [
            r.runId,
            r.mode,
            r.startedAt,
            seconds(r),
            r.regions.join(', '),
            ...[r.jobs, r.ok, r.errors, r.failed, r.notRun, r.findings].map(String),
          ]),
          'lllrlrrrrrr',
        )}\n`,
      );
    }
  },
};

const show: CommandModule<object, ArgsOf<typeof showOptions>> = {
  command: 'show <id>',
  describe: "Print a stored run's report (--json: the whole run; --html, --markdown, --csv: write those instead)",
  builder: showOptions,
  handler: async (args) => {
    // Shown while the client is open: a big run's results are read a page at a time.
    await withFleetClient(args, log, async (fleet) => {
      const run = await fleet.store.parts(args.id);
      if (!run) {
        process.stderr.write(
          `probefleet: no stored run "${args.id}" (see: probefleet runs list; reports expire after the fleet's report retention)\n`,
        );
        process.exitCode = 1;
        return;
      }
      const files = { html: args.html, markdown: args.markdown, csv: args.csv };
      if (wantsReportFiles(files)) await writeRunFiles(run, files);
      else if (args.json) await writeRunJson(run, '-');
      else process.stdout.write(isWhole(run) ? renderRunReport(await wholeReport(run)) : renderRunSummary(run.head));
    });
  },
};

export const runsCommand: CommandModule = {
  command: 'runs',
  describe: 'List and show run reports stored in Redis',
  builder: (y) => y.command(list).command(show).demandCommand(1, 'runs needs a subcommand: list or show'),
  handler: () => {},
};
