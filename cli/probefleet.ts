// `probefleet`: one command module per file under cli/commands/, loaded only when its command is
// given (cli/commands/index.ts); what every command shares is here, and loads nothing heavy.
import { once } from 'node:events';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { BadArgumentError, BadInputError } from '../common/bad-input.js';
import { LOG_LEVELS } from '../common/log.js';
import { printable } from '../common/printable.js';
import { RedisFullError, RedisUnreachableError } from '../common/redis-errors.js';
import { commandsFor } from './commands/index.js';
import { withStdoutDashesJoined } from './options/args.js';
import {
  EXIT_BAD_INPUT,
  EXIT_BROKEN_PIPE,
  EXIT_CODES_HELP,
  EXIT_FAILED,
  EXIT_LINGER_MS,
  EXIT_REDIS_UNREACHABLE,
} from './exit-codes.js';

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

export async function main(given: string[]): Promise<void> {
  const argv = withStdoutDashesJoined(given);
  await yargs(argv)
    .scriptName('probefleet')
    .usage('$0 <command> [options]\n\nMeasures what HTTP transport choices cost, from one machine or many regions.')
    .option('log-level', {
      type: 'string',
      choices: LOG_LEVELS,
      describe: 'Log level of the structured logs on stderr (default: warn for run and plan, info otherwise)',
    })
    .middleware((args) => {
      if (args.logLevel) process.env.PROBEFLEET_LOG_LEVEL = args.logLevel as string;
      // Checked here: a command that ends makes its logger only when something goes wrong.
      const level = process.env.PROBEFLEET_LOG_LEVEL;
      if (level !== undefined && !LOG_LEVELS.includes(level))
        throw new BadArgumentError(`PROBEFLEET_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${level}")`);
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

/** What `probefleet ARGS` does, whole: the command, then its exit status and error line. Called
 * once below, not awaited at the top level, so the CLI can be bundled as one script
 * (cli/build-bundle.ts; a script has no top-level await). */
async function runCommandLine(): Promise<void> {
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
}

void runCommandLine();
