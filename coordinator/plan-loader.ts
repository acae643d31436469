// Reads a plan file: YAML with positions, validated against contracts/plan.ts. Every problem
// is reported as FILE:LINE:COL: FIELD: MESSAGE, all of them at once, and nothing runs. The
// plan's limits (contracts/limits.ts PLAN_LIMITS) are checked before the work they bound:
// the file's kind and size before reading it, nesting on the parser's tokens before the
// (recursive) composer and converter see them, string lengths before the schema, and the jobs
// a run makes by arithmetic, before any is made.
import path from 'node:path';
import {
  Composer,
  type Document,
  isAlias,
  isCollection,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  Parser,
} from 'yaml';
import type { z } from 'zod';
import { PLAN_LIMITS } from '../contracts/limits.js';
import type { JobTls } from '../contracts/job.js';
import { planSchema, type Plan, type Target, type WrittenPlan } from '../contracts/plan.js';
import { REQUEST_BODY_BYTES } from '../contracts/request.js';
import { wholeReference } from '../contracts/secrets.js';
import { PROBE_KINDS } from '../contracts/probes/index.js';
import { closestWord } from '../common/closest-word.js';
import { formatIssuePath } from '../common/issue-path.js';
import { fieldNamesAt } from '../common/schema-fields.js';
import { BadInputError } from '../common/bad-input.js';
import { printable } from '../common/printable.js';
import { readBoundedFile, readUserTextFile } from '../common/read-bounded-file.js';
import type { LoadedPlan } from './loaded-plan.js';
import { countJobs, tooManyJobsMessage } from './split.js';
import { withDualStackTargets } from './dual-stack.js';
import { expandTargetFiles, isFileProblem, type TargetFilesSource } from './target-files.js';
import { firstTooBig } from './yaml-bounds.js';
import { thousands } from '../common/plural.js';

export interface PlanProblem {
  file: string;
  line: number;
  column: number;
  /** `targets[0].url`, or empty for a YAML syntax error. */
  field: string;
  message: string;
}

export class PlanError extends BadInputError {
  override name = 'PlanError';
  constructor(readonly problems: PlanProblem[]) {
    super(
      [
        ...problems.slice(0, MAX_PROBLEM_LINES).map(formatProblem),
        ...(problems.length > MAX_PROBLEM_LINES
          ? [`... and ${problems.length - MAX_PROBLEM_LINES} more problems (the first ${MAX_PROBLEM_LINES} are shown)`]
          : []),
      ].join('\n'),
    );
  }
}

/** A plan error names at most this many problems: past them, one line says how many more there are. */
const MAX_PROBLEM_LINES = 50;

/** One line of a plan error; a URL or header value it quotes is shown with control characters escaped. */
export function formatProblem(p: PlanProblem): string {
  return printable(`${p.file}:${p.line}:${p.column}: ${p.field ? `${p.field}: ` : ''}${p.message}`);
}

export interface PlanOptions {
  /** The most jobs one run of the plan may make. @defaultValue PLAN_LIMITS.jobsPerRun */
  maxJobs?: number;
}

export async function loadPlanFile(file: string, options: PlanOptions = {}): Promise<LoadedPlan> {
  let bytes: Buffer;
  try {
    bytes = await readBoundedFile(file, PLAN_LIMITS.fileBytes);
  } catch (err) {
    throw new PlanError([
      { file, line: 1, column: 1, field: '', message: `cannot read plan: ${(err as Error).message}` },
    ]);
  }
  return parsePlan(bytes.toString('utf8'), file, options);
}

export async function parsePlan(text: string, file: string, options: PlanOptions = {}): Promise<LoadedPlan> {
  const lineCounter = new LineCounter();
  const at = (offset: number) => lineCounter.linePos(offset);
  const doc = composeOne(text, file, lineCounter);

  if (doc.errors.length > 0) {
    throw new PlanError(
      doc.errors.map((e) => {
        const { line, col } = at(e.pos[0]);
        if (e.code === 'DUPLICATE_KEY') {
          const fieldPath = pathOfKeyAt(doc.contents, e.pos[0]);
          if (fieldPath)
            return {
              file,
              line,
              column: col,
              field: formatIssuePath(fieldPath),
              message: 'YAML: given twice in the same mapping',
            };
        }
        if (e.code === 'MULTIPLE_DOCS') return { file, line, column: col, field: '', message: MULTIPLE_DOCUMENTS };
        return {
          file,
          line,
          column: col,
          field: '',
          message: `YAML: ${e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`,
        };
      }),
    );
  }
  if (!isMap(doc.contents)) {
    throw new PlanError([
      { file, line: 1, column: 1, field: '', message: 'a plan is a YAML mapping (name, targets, experiments, ...)' },
    ]);
  }
  const data = toPlainData(doc, file, at);

  const parsed = planSchema.safeParse(data);
  // The files targets name are read whatever the schema said, so their problems come out with the others.
  const files = await readTargetFiles(data, doc, file, at);
  if (!parsed.success) {
    const issues = parsed.error.issues.filter((issue) => !isLooserBound(issue, parsed.error.issues));
    throw new PlanError([...issues.flatMap((issue) => problemsOf(issue, doc, file, at, data)), ...files.problems]);
  }
  if (files.problems.length > 0) throw new PlanError(files.problems);
  const parsedPlan = parsed.data as WrittenPlan;
  // The plan as run holds each body's text, so a job, a schedule and the report carry what was sent.
  const written: WrittenPlan = parsedPlan.targets
    ? {
        ...parsedPlan,
        targets: parsedPlan.targets.map((t, i) => (files.bodies.has(i) ? { ...t, body: files.bodies.get(i) } : t)),
      }
    : parsedPlan;
  const own = written.targets ?? [];
  let tls: LoadedPlan['tls'] = {};
  for (const [i, target] of own.entries()) {
    if (target.tls) tls[target.name] = jobTlsOf(target.tls, files.pems.get(i), files.certs.get(i));
  }
  // Targets from files: read now, and again each time a schedule of the plan fires (coordinator/target-files.ts).
  let plan = written as Plan;
  let targetFiles: TargetFilesSource | undefined;
  if (written.targetFiles) {
    targetFiles = {
      dir: path.dirname(path.resolve(file)),
      tls: written.targetFiles.map((g, i) =>
        g.tls ? jobTlsOf(g.tls, files.groupPems.get(i), files.groupCerts.get(i)) : null,
      ),
    };
    const expanded = await expandTargetFiles(written, targetFiles);
    if (expanded.problems.length > 0)
      throw new PlanError(
        expanded.problems.map((p) => (isFileProblem(p) ? p : problemAt(doc, p.path, file, at, p.message))),
      );
    plan = expanded.plan;
    Object.assign(tls, expanded.tls);
  }
  ({ plan, tls } = withDualStackTargets(plan, tls));
  const maxJobs = options.maxJobs ?? PLAN_LIMITS.jobsPerRun;
  const jobs = countJobs(plan);
  if (jobs.total > maxJobs)
    throw new PlanError([problemAt(doc, ['experiments'], file, at, tooManyJobsMessage(jobs, maxJobs))]);
  const { line, column } = problemAt(doc, ['experiments'], file, at, '');
  return { plan, file, tls, maxJobs, experimentsAt: { line, column }, ...(targetFiles ? { targetFiles } : {}) };
}

/** A target's TLS settings as jobs carry them: the CA file's and the client certificate's PEM instead of their paths. */
function jobTlsOf(tls: NonNullable<Target['tls']>, caPem: string | undefined, cert: string | undefined): JobTls {
  const { ca: _, ...rest } = tls;
  return { ...rest, ...(caPem ? { caPem } : {}), ...(cert ? { cert } : {}) };
}

const MULTIPLE_DOCUMENTS = 'YAML: a plan is one document; this file has more (a "---" line)';

/**
 * The file's one YAML document. The parser keeps its own stack, but the composer and the
 * converter to plain data recurse once per level, so nesting is bounded on the parser's tokens
 * first: a file of 3,000 "[" is refused where it passes the limit, not by a stack overflow.
 */
function composeOne(text: string, file: string, lineCounter: LineCounter): Document {
  const tokens = [...new Parser(lineCounter.addNewLine).parse(text)];
  const tooBig = firstTooBig(tokens, PLAN_LIMITS.nestingDepth, PLAN_LIMITS.collectionItems);
  if (tooBig !== undefined) {
    const { line, col } = lineCounter.linePos(tooBig.offset);
    const message =
      tooBig.problem === 'deep'
        ? `YAML: lists and mappings nested more than ${PLAN_LIMITS.nestingDepth} deep (the limit; a plan needs 4)`
        : `YAML: a list or mapping of more than ${thousands(PLAN_LIMITS.collectionItems)} items (the limit; a plan holds at most 100 targets and 50 experiments)`;
    throw new PlanError([{ file, line, column: col, field: '', message }]);
  }
  const [doc, second] = new Composer({ uniqueKeys: true }).compose(tokens, true, text.length);
  if (second) {
    const { line, col } = lineCounter.linePos(second.range[0]);
    throw new PlanError([{ file, line, column: col, field: '', message: MULTIPLE_DOCUMENTS }]);
  }
  return doc;
}

/** The files a plan's targets name, read (by target index): `tls.ca` and `tls.cert` into PEM, `body.file` into
 * the body's text; and the `tls.ca` and `tls.cert` of each targetFiles entry (by its index). Read from the
 * plan as written, so their problems come out with the schema's. */
async function readTargetFiles(
  data: unknown,
  doc: Document,
  file: string,
  at: (o: number) => { line: number; col: number },
) {
  const pems = new Map<number, string>();
  const certs = new Map<number, string>();
  const bodies = new Map<number, string>();
  const groupPems = new Map<number, string>();
  const groupCerts = new Map<number, string>();
  const problems: PlanProblem[] = [];
  const targets = (data as { targets?: unknown } | null)?.targets;
  /** The file's text, or undefined with its problem noted at the field that names it. */
  const read = async (named: string, fieldPath: (string | number)[], what: string, maxBytes: number) => {
    const resolved = path.resolve(path.dirname(file), named);
    const shown = path.relative(process.cwd(), resolved) || '.';
    const read = await readUserTextFile(resolved, maxBytes, { keepBom: true });
    if ('text' in read) return { text: read.text, shown };
    problems.push(problemAt(doc, fieldPath, file, at, `cannot read ${what} ${shown}: ${read.reason}`));
    return undefined;
  };
  /** A CA file and a client certificate named by path, into PEM; one given as a reference is read on the worker. */
  const readPems = async (
    tls: { ca?: unknown; cert?: unknown } | undefined,
    prefix: (string | number)[],
    i: number,
    into: { pems: Map<number, string>; certs: Map<number, string> },
  ) => {
    if (typeof tls?.ca === 'string' && tls.ca !== '') {
      const fieldPath = [...prefix, 'tls', 'ca'];
      const ca = await read(tls.ca, fieldPath, 'CA file', PLAN_LIMITS.fileBytes);
      if (ca?.text.includes('-----BEGIN CERTIFICATE-----')) into.pems.set(i, ca.text);
      else if (ca) problems.push(problemAt(doc, fieldPath, file, at, `${ca.shown} holds no PEM certificate`));
    }
    if (typeof tls?.cert === 'string' && tls.cert !== '' && !wholeReference(tls.cert)) {
      const fieldPath = [...prefix, 'tls', 'cert'];
      const cert = await read(tls.cert, fieldPath, 'client certificate', PLAN_LIMITS.fileBytes);
      if (cert?.text.includes('-----BEGIN CERTIFICATE-----')) into.certs.set(i, cert.text);
      else if (cert) problems.push(problemAt(doc, fieldPath, file, at, `${cert.shown} holds no PEM certificate`));
    }
  };
  for (const [i, target] of (Array.isArray(targets) ? targets : []).entries()) {
    const { tls, body } = (target ?? {}) as { tls?: { ca?: unknown; cert?: unknown }; body?: { file?: unknown } };
    await readPems(tls, ['targets', i], i, { pems, certs });
    if (typeof body === 'object' && body !== null && typeof body.file === 'string' && body.file !== '') {
      const bodyFile = await read(body.file, ['targets', i, 'body', 'file'], 'body file', REQUEST_BODY_BYTES);
      if (bodyFile) bodies.set(i, bodyFile.text);
    }
  }
  const groups = (data as { targetFiles?: unknown } | null)?.targetFiles;
  for (const [i, group] of (Array.isArray(groups) ? groups : []).entries()) {
    const { tls } = (group ?? {}) as { tls?: { ca?: unknown; cert?: unknown } };
    await readPems(tls, ['targetFiles', i], i, { pems: groupPems, certs: groupCerts });
  }
  return { pems, certs, bodies, groupPems, groupCerts, problems };
}

/** The field path of the mapping key that starts at `offset`, for YAML errors that point at a key. */
function pathOfKeyAt(node: unknown, offset: number, prefix: (string | number)[] = []): (string | number)[] | undefined {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : '?';
      if ((pair.key as Node | null)?.range?.[0] === offset) return [...prefix, key];
      const found = pathOfKeyAt(pair.value, offset, [...prefix, key]);
      if (found) return found;
    }
  } else if (isSeq(node)) {
    for (const [i, item] of node.items.entries()) {
      const found = pathOfKeyAt(item, offset, [...prefix, i]);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * The document as plain data. Keys must be scalars (a list or mapping as a key would become its
 * text, with a warning on stderr), strings at most PLAN_LIMITS.stringChars long, and aliases must
 * resolve within the YAML library's bound on their expansion (a "billion laughs" document): each
 * is refused where it is written.
 */
function toPlainData(doc: Document, file: string, at: (o: number) => { line: number; col: number }): unknown {
  const problems: PlanProblem[] = [];
  let firstAlias: Node | undefined;
  const problem = (node: Node, fieldPath: (string | number)[], message: string) => {
    const { line, col } = at(node.range?.[0] ?? 0);
    problems.push({ file, line, column: col, field: fieldPath.length > 0 ? formatIssuePath(fieldPath) : '', message });
  };
  const tooLong = (node: unknown): node is Node & { value: string } =>
    isScalar(node) && typeof node.value === 'string' && node.value.length > PLAN_LIMITS.stringChars;
  const overLimit = (what: string, chars: number) =>
    `${what}${thousands(chars)} characters, over the limit of ${thousands(PLAN_LIMITS.stringChars)} characters per string`;
  // Recursive: composeOne has bounded the depth.
  const walk = (node: unknown, fieldPath: (string | number)[]): void => {
    if (isAlias(node)) firstAlias ??= node;
    else if (tooLong(node)) problem(node, fieldPath, overLimit('', node.value.length));
    else if (isSeq(node)) for (const [i, item] of node.items.entries()) walk(item, [...fieldPath, i]);
    else if (isMap(node)) {
      for (const pair of node.items) {
        const key = pair.key as Node | null;
        if (isCollection(key)) problem(key, [], 'YAML: a key must be a plain name, not a list or mapping');
        else if (tooLong(key)) problem(key, fieldPath, overLimit('a key of ', key.value.length));
        else walk(pair.value, [...fieldPath, isScalar(key) ? String(key.value) : '?']);
      }
    }
  };
  walk(doc.contents, []);
  if (problems.length > 0) throw new PlanError(problems);
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_EXPANSIONS });
  } catch (err) {
    // The YAML library's errors here are about aliases (unresolved, or expanding too much).
    problem(firstAlias ?? doc.contents!, [], `YAML: ${(err as Error).message}`);
    throw new PlanError(problems);
  }
}

/** Aliases a plan may expand: plenty for reusing a block of settings, far too few to exhaust memory. */
const MAX_ALIAS_EXPANSIONS = 100;

type Issue = z.core.$ZodIssue;

/**
 * zod checks an integer against both its own bounds and the safe-integer range; when a value
 * breaks both on the same field, the plan's own bound is the one worth reading.
 */
function isLooserBound(issue: Issue, all: readonly Issue[]): boolean {
  if (issue.code !== 'too_big' && issue.code !== 'too_small') return false;
  const limit = Number(issue.code === 'too_big' ? issue.maximum : issue.minimum);
  return all.some(
    (other) =>
      other !== issue &&
      other.code === issue.code &&
      formatIssuePath(other.path) === formatIssuePath(issue.path) &&
      (issue.code === 'too_big'
        ? Number((other as typeof issue).maximum) < limit
        : Number((other as typeof issue).minimum) > limit),
  );
}

function problemsOf(
  issue: Issue,
  doc: Document,
  file: string,
  at: (o: number) => { line: number; col: number },
  data: unknown,
): PlanProblem[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => {
      const parent = doc.getIn(issue.path, true);
      // Keys are scalars (toPlainData), but not always strings: `5:` is the number 5, listed as "5".
      const pair = isMap(parent) ? parent.items.find((p) => isScalar(p.key) && String(p.key.value) === key) : undefined;
      const keyNode = pair?.key as Node | undefined;
      const { line, col } = at(keyNode?.range?.[0] ?? 0);
      const field = formatIssuePath([...issue.path, key]);
      return {
        file,
        line,
        column: col,
        field,
        message: unknownFieldMessage(key, fieldNamesAt(planSchema, issue.path, data)),
      };
    });
  }
  return [problemAt(doc, issue.path, file, at, messageOf(issue, valueAt(data, issue.path)))];
}

/** `unknown field "urll" (did you mean "url"?)`, or the fields that mapping may hold when none is near. */
function unknownFieldMessage(key: string, known: string[]): string {
  const meant = closestWord(key, known);
  if (meant) return `unknown field "${key}" (did you mean "${meant}"?)`;
  return known.length > 0 ? `unknown field "${key}" (fields here: ${known.join(', ')})` : `unknown field "${key}"`;
}

/** Position of the deepest node on `fieldPath` that exists (a missing field points at its parent). */
function problemAt(
  doc: Document,
  fieldPath: readonly PropertyKey[],
  file: string,
  at: (o: number) => { line: number; col: number },
  message: string,
): PlanProblem {
  for (let depth = fieldPath.length; depth >= 0; depth--) {
    const node = doc.getIn(fieldPath.slice(0, depth) as unknown[], true) as Node | undefined;
    if (node?.range) {
      const { line, col } = at(node.range[0]);
      return { file, line, column: col, field: formatIssuePath(fieldPath), message };
    }
  }
  return { file, line: 1, column: 1, field: formatIssuePath(fieldPath), message };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `"${value}"`;
  return String(value);
}

function valueAt(data: unknown, fieldPath: readonly PropertyKey[]): unknown {
  let value = data;
  for (const key of fieldPath) value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
  return value;
}

/** Messages in the plan's words; `value` is what the plan holds at the issue's path. */
function messageOf(issue: Issue, value: unknown): string {
  const input = value;
  switch (issue.code) {
    case 'invalid_type':
      if (input === undefined) return 'is required';
      return `expected ${issue.expected === 'int' ? 'an integer' : issue.expected}, got ${describe(input)}`;
    case 'too_small':
      if (issue.origin === 'array') return `needs at least ${issue.minimum} item${issue.minimum === 1 ? '' : 's'}`;
      if (issue.origin === 'string') return 'may not be empty';
      return `must be at least ${issue.minimum} (got ${describe(input)})`;
    case 'too_big':
      if (issue.origin === 'array') return `allows at most ${issue.maximum} items`;
      return `must be at most ${issue.maximum} (got ${describe(input)})`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => `"${String(v)}"`).join(', ')} (got ${describe(input)})`;
    case 'invalid_union':
      if ((issue as { discriminator?: string }).discriminator === 'probe') {
        return input === undefined
          ? `is required (one of ${PROBE_KINDS.join(', ')})`
          : `unknown probe ${describe(input)} (known probes: ${PROBE_KINDS.join(', ')})`;
      }
      return issue.message;
    case 'invalid_key':
      return `${issue.issues[0]?.message ?? 'invalid key'}: "${String(issue.path.at(-1))}"`;
    default:
      return issue.message;
  }
}
