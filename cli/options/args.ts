// What every command's options share: the type of the arguments they parse, and `-` after a
// file option read as stdout.
import type { Argv } from 'yargs';

/** The parsed arguments a command's option builder declares. */
export type ArgsOf<B extends (y: Argv) => Argv<unknown>> = ReturnType<B> extends Argv<infer T> ? T : never;

/** Options that write a file, where "-" is stdout (cli/commands/report-files.ts). */
const FILE_OPTIONS = new Set(['--json', '--html', '--markdown', '--csv']);

/**
 * yargs reads a lone "-" after an option as an argument of its own, so `--markdown -` would be
 * refused as an unknown argument "-": it is joined into `--markdown=-` before parsing.
 */
export function withStdoutDashesJoined(argv: string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (FILE_OPTIONS.has(argv[i]!) && argv[i + 1] === '-') joined.push(`${argv[i++]}=-`);
    else joined.push(argv[i]!);
  }
  return joined;
}
