// Reads a run JSON (`probefleet.run/v1`, from `run --json`) back, validated with the same
// schema that wrote it. A bad file is bad input: the error names the file and the field.
import { readFile } from 'node:fs/promises';
import { BadInputError } from '../../common/bad-input.js';
import { formatIssuePath } from '../../common/issue-path.js';
import { RUN_SCHEMA, runReportSchema, type RunReport } from '../../contracts/result.js';

/** Problems shown at most; the rest are counted. */
const MAX_PROBLEMS = 10;

/** Bad input (exit 2): the message names the file and, for a schema problem, the field. */
export class RunFileError extends BadInputError {
  override name = 'RunFileError';
}

export async function readRunFile(file: string): Promise<RunReport> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new RunFileError(`${file}: cannot read: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new RunFileError(`${file}: not JSON: ${(err as Error).message}`);
  }
  const schema = (json as { schema?: unknown } | null)?.schema;
  if (schema !== RUN_SCHEMA) {
    throw new RunFileError(
      `${file}: schema: expected "${RUN_SCHEMA}", found ${JSON.stringify(schema) ?? 'none'} (write one with: probefleet run PLAN --json FILE)`,
    );
  }
  const parsed = runReportSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues;
    const lines = issues
      .slice(0, MAX_PROBLEMS)
      .map((issue) => `${file}: ${formatIssuePath(issue.path)}: ${issue.message}`);
    if (issues.length > MAX_PROBLEMS) lines.push(`${file}: ... and ${issues.length - MAX_PROBLEMS} more problems`);
    throw new RunFileError(lines.join('\n'));
  }
  return parsed.data as RunReport;
}
