// What the user gave is wrong (a plan, an option, a URL): the CLI prints the message alone and
// exits 2, where any other error exits 1.
export class BadInputError extends Error {
  override name = 'BadInputError';
}

/** A command-line option or its environment form is wrong. */
export class BadArgumentError extends BadInputError {
  override name = 'BadArgumentError';
}
