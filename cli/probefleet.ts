// `probefleet`: one command module per file under cli/commands/.
import { once } from 'node:events';
import yargs, { type CommandModule } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { BadInputError } from '../common/bad-input.js';
import { printable } from '../common/printable.js';
import { RedisUnreachableError } from '../common/redis.js';
import { RedisFullError } from '../common/redis-errors.js';
import { withStdoutDashesJoined } from './commands/args.js';
import {
  EXIT_BAD_INPUT,
  EXIT_BROKEN_PIPE,
  EXIT_CODES_HELP,
  EXIT_FAILED,
  EXIT_LINGER_MS,
  EXIT_REDIS_UNREACHABLE,
} from './exit-codes.js';

/**
 * Each command's module, loaded only when it is asked for: `plan validate` need not load
 * BullMQ, undici and the probes. Help and unknown commands load them all. Order = help's order.
 */
// biome-ignore lint/suspicious/noExplicitAny: each command module has its own argument types
type AnyCommand = CommandModule<any, any>;
const COMMANDS: Record<string, () => Promise<AnyCommand>> = {
  run: async () => (await import('./commands/run.js')).runCommand,
  plan: async () => (await import('./commands/plan.js')).planCommand,
  lab: async () => (await import('./commands/lab.js')).labCommand,
  worker: async () => (await import('./commands/worker.js')).workerCommand,
  coordinator: async () => (await import('./commands/coordinator.js')).coordinatorCommand,
  schedule: async () => (await import('./commands/schedule.js')).scheduleCommand,
  runs: async () => (await import('./commands/runs.js')).runsCommand,
  regions: async () => (await import('./commands/regions.js')).regionsCommand,
  demo: async () => (await import('./commands/demo.js')).demoCommand,
  report: async () => (await import('./commands/report.js')).reportCommand,
  compare: async () => (await import('./commands/compare.js')).compareCommand,
  alerts: async () => (await import('./commands/alerts.js')).alertsCommand,
};

/**
 * `probefleet plan expand plan.yaml | head`: once the reader has gone, every write fails with
 * EPIPE, which would surface as an uncaught error and a stack trace. End quietly instead, as a
 * program killed by SIGPIPE does (status 141, which `set -o pipefail` still sees), whatever the
 * command was writing. Node ignores SIGPIPE itself, so the signal cannot do it.
 */
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(EXIT_BROKEN_PIPE);
    throw err;
  });
}

/** An error's message for the terminal: each line with what a plan or a target put in it escaped. */
const shown = (message: string) => message.split('\n').map(printable).join('\n');

async function commandsFor(argv: string[]): Promise<AnyCommand[]> {
  const asked = argv.find((arg) => Object.hasOwn(COMMANDS, arg));
  return Promise.all((asked ? [asked] : Object.keys(COMMANDS)).map((name) => COMMANDS[name]!()));
}

export async function main(given: string[]): Promise<void> {
  const argv = withStdoutDashesJoined(given);
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
    .command(await commandsFor(argv))
    .demandCommand(1, 'Name a command; see --help.')
    .strict()
    .epilog(EXIT_CODES_HELP)
    .help()
    .version()
    .wrap(Math.min(110, process.stdout.columns || 110))
    .fail((message, err) => {
      if (err) throw err;
      process.stderr.write(`probefleet: ${shown(message)}\nRun probefleet --help for usage.\n`);
      process.exit(EXIT_BAD_INPUT);
    })
    .parseAsync();
}

try {
  await main(hideBin(process.argv));
} catch (err) {
  if (err instanceof BadInputError) {
    process.stderr.write(`${shown(err.message)}\n`);
    process.exitCode = EXIT_BAD_INPUT;
  } else if (err instanceof RedisUnreachableError || err instanceof RedisFullError) {
    process.stderr.write(`probefleet: ${shown(err.message)}\n`);
    process.exitCode = EXIT_REDIS_UNREACHABLE;
  } else {
    process.stderr.write(`probefleet: ${shown((err as Error).message)}\n`);
    process.exitCode = EXIT_FAILED;
  }
}

// Done: nothing of ours is left to run. Unref'd, so a process with nothing pending ends at once.
setTimeout(async () => {
  const writing = [process.stdout, process.stderr].filter((stream) => stream.writableLength > 0);
  await Promise.all(writing.map((stream) => once(stream, 'drain')));
  process.exit();
}, EXIT_LINGER_MS).unref();
