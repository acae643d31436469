// Reads a run JSON (`probefleet.run/v1`, from `run --json`) back, validated with the same
// schema that wrote it. A bad file is bad input: the error names the file and the field. The file
// is read a chunk at a time (json-members.ts), never whole: a first read checks the head and every
// result and keeps the head's counts; each reading of the results then goes through the file
// again, a page at a time, so a run of a million results is shown in bounded memory.
import { createReadStream } from 'node:fs';
import type { z } from 'zod';
import { BadInputError } from '../../common/bad-input.js';
import { formatIssuePath } from '../../common/issue-path.js';
import {
  isNotableResult,
  NOTABLE_RESULTS_KEPT,
  probeResultSchema,
  RUN_SCHEMA,
  runReportSchema,
  type ProbeResult,
  type RunReport,
} from '../../contracts/result.js';
import type { RunParts } from '../run-parts.js';
import { JsonMembersError, topLevelArrayMembers } from './json-members.js';

/** Problems shown at most; the rest are counted. */
const MAX_PROBLEMS = 10;
/** Results per page as the file is read again. */
const RESULTS_PER_PAGE = 500;

/** Bad input (exit 2): the message names the file and, for a schema problem, the field. */
export class RunFileError extends BadInputError {
  override name = 'RunFileError';
}

/** The run as its head and its results a page at a time, every part checked before it is returned. */
export async function readRunFileParts(file: string): Promise<RunParts> {
  const problems: string[] = [];
  let problemCount = 0;
  const problem = (issues: readonly z.core.$ZodIssue[], under: PropertyKey[]) => {
    for (const issue of issues) {
      if (problemCount++ < MAX_PROBLEMS)
        problems.push(`${file}: ${formatIssuePath([...under, ...issue.path])}: ${issue.message}`);
    }
  };
  let resultCount = 0;
  let okCount = 0;
  const notableResults: ProbeResult[] = [];
  let headText = '';
  for await (const part of readResults(file)) {
    if ('rest' in part) {
      headText = part.rest;
      continue;
    }
    const parsed = probeResultSchema.safeParse(part.result);
    if (!parsed.success) problem(parsed.error.issues, ['results', resultCount]);
    else {
      const result = parsed.data as ProbeResult;
      if (result.ok) okCount++;
      if (isNotableResult(result) && notableResults.length < NOTABLE_RESULTS_KEPT) notableResults.push(result);
    }
    resultCount++;
  }
  const json = parseJson(file, headText, 'the document');
  const schema = (json as { schema?: unknown } | null)?.schema;
  if (schema !== RUN_SCHEMA) {
    throw new RunFileError(
      `${file}: schema: expected "${RUN_SCHEMA}", found ${JSON.stringify(schema) ?? 'none'} (write one with: probefleet run PLAN --json FILE)`,
    );
  }
  const parsedHead = runReportSchema.safeParse(json);
  if (!parsedHead.success) problem(parsedHead.error.issues, []);
  if (problemCount > 0) {
    if (problemCount > MAX_PROBLEMS) problems.push(`${file}: ... and ${problemCount - MAX_PROBLEMS} more problems`);
    throw new RunFileError(problems.join('\n'));
  }
  const { results: _none, ...head } = parsedHead.data as RunReport;
  return {
    head: { ...head, resultCount, okCount, notableResults },
    async *pages() {
      // As checked in the first read (defaults filled in); a file changed since is refused, not shown in part.
      let page: ProbeResult[] = [];
      let read = 0;
      for await (const part of readResults(file)) {
        if ('rest' in part) continue;
        const parsed = probeResultSchema.safeParse(part.result);
        if (!parsed.success)
          throw new RunFileError(`${file}: changed while it was read (results[${read}] is no longer valid)`);
        read++;
        page.push(parsed.data as ProbeResult);
        if (page.length === RESULTS_PER_PAGE) {
          yield page;
          page = [];
        }
      }
      if (page.length > 0) yield page;
      if (read !== resultCount)
        throw new RunFileError(`${file}: changed while it was read (${resultCount} results, then ${read})`);
    },
  };
}

/** The file's results in order, each parsed from JSON, and last the rest of the document's text. */
async function* readResults(file: string): AsyncGenerator<{ result: unknown } | { rest: string }> {
  const chunks = createReadStream(file, { encoding: 'utf8' });
  let index = 0;
  try {
    for await (const member of topLevelArrayMembers(chunks, 'results')) {
      if ('rest' in member) yield member;
      else yield { result: parseJson(file, member.element, `results[${index++}]`) };
    }
  } catch (err) {
    if (err instanceof RunFileError) throw err;
    if (err instanceof JsonMembersError) throw new RunFileError(`${file}: not JSON: ${err.message}`);
    throw new RunFileError(`${file}: cannot read: ${(err as Error).message}`);
  } finally {
    chunks.destroy();
  }
}

function parseJson(file: string, text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new RunFileError(`${file}: not JSON: ${what}: ${(err as Error).message}`);
  }
}
