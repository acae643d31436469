// `probefleet`: one command module per file under coordinator/commands/.
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { labCommand } from './commands/lab.js';
import { planCommand } from './commands/plan.js';
import { regionsCommand } from './commands/regions.js';
import { reportCommand } from './commands/report.js';
import { runCommand } from './commands/run.js';
import { coordinatorCommand } from './commands/coordinator.js';
import { demoCommand } from './commands/demo.js';
import { BadArgumentError } from './commands/redis-args.js';
import { runsCommand } from './commands/runs.js';
import { scheduleCommand } from './commands/schedule.js';
import { workerCommand } from './commands/worker.js';
import { RedisUrlError } from '../common/redis.js';
import { PlanError } from './plan-loader.js';

/** Exit codes: 0 done, 1 failed, 2 bad input (plan, arguments). */
export const EXIT_FAILED = 1;
export const EXIT_BAD_INPUT = 2;

export async function main(argv: string[]): Promise<void> {
  await yargs(argv)
    .scriptName('probefleet')
    .usage('$0 <command> [options]\n\nMeasures what HTTP transport choices cost, from one machine or many regions.')
    .option('log-level', {
      type: 'string',
      choices: ['trace', 'debug', 'info', 'warn', 'error', 'silent'],
      describe: 'Log level of the structured logs on stderr (default: warn for run and plan, info otherwise)',
    })
    .middleware((args) => {
      if (args.logLevel) process.env.PROBEFLEET_LOG_LEVEL = args.logLevel as string;
    })
    .command(runCommand)
    .command(planCommand)
    .command(labCommand)
    .command(workerCommand)
    .command(coordinatorCommand)
    .command(scheduleCommand)
    .command(runsCommand)
    .command(regionsCommand)
    .command(demoCommand)
    .command(reportCommand)
    .demandCommand(1, 'Name a command; see --help.')
    .strict()
    .help()
    .version()
    .wrap(Math.min(110, process.stdout.columns || 110))
    .fail((message, err) => {
      if (err) throw err;
      process.stderr.write(`probefleet: ${message}\nRun probefleet --help for usage.\n`);
      process.exit(EXIT_BAD_INPUT);
    })
    .parseAsync();
}

try {
  await main(hideBin(process.argv));
} catch (err) {
  if (err instanceof PlanError || err instanceof BadArgumentError || err instanceof RedisUrlError) {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = EXIT_BAD_INPUT;
  } else {
    process.stderr.write(`probefleet: ${(err as Error).message}\n`);
    process.exitCode = EXIT_FAILED;
  }
}
