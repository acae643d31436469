import type { Argv } from 'yargs';

/** The parsed arguments a command's option builder declares. */
export type ArgsOf<B extends (y: Argv) => Argv<unknown>> = ReturnType<B> extends Argv<infer T> ? T : never;
