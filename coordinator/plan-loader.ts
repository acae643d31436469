// Reads a plan file: YAML with positions, validated against contracts/plan.ts. Every problem
// is reported as FILE:LINE:COL: FIELD: MESSAGE, all of them at once, and nothing runs.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  isCollection,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
  type Document,
  type Node,
} from 'yaml';
import type { z } from 'zod';
import type { JobTls } from '../contracts/job.js';
import { planSchema, type Plan } from '../contracts/plan.js';
import { PROBE_KINDS } from '../contracts/probes/index.js';
import { formatIssuePath } from '../common/issue-path.js';
import { BadInputError } from '../common/bad-input.js';

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
    super(problems.map(formatProblem).join('\n'));
  }
}

export function formatProblem(p: PlanProblem): string {
  return `${p.file}:${p.line}:${p.column}: ${p.field ? `${p.field}: ` : ''}${p.message}`;
}

export interface LoadedPlan {
  plan: Plan;
  file: string;
  /** Per target name, TLS settings with any CA file read into PEM (jobs carry PEM, not paths). */
  tls: Record<string, JobTls | undefined>;
}

export async function loadPlanFile(file: string): Promise<LoadedPlan> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new PlanError([
      { file, line: 1, column: 1, field: '', message: `cannot read plan: ${(err as Error).message}` },
    ]);
  }
  return parsePlan(text, file);
}

export async function parsePlan(text: string, file: string): Promise<LoadedPlan> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number) => lineCounter.linePos(offset);

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
        if (e.code === 'MULTIPLE_DOCS')
          return {
            file,
            line,
            column: col,
            field: '',
            message: 'YAML: a plan is one document; this file has more (a "---" line)',
          };
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
  // CA files are read whatever the schema said, so their problems come out with the others.
  const ca = await readCaFiles(data, doc, file, at);
  if (!parsed.success) {
    const issues = parsed.error.issues.filter((issue) => !isLooserBound(issue, parsed.error.issues));
    throw new PlanError([...issues.flatMap((issue) => problemsOf(issue, doc, file, at, data)), ...ca.problems]);
  }
  if (ca.problems.length > 0) throw new PlanError(ca.problems);
  const plan = parsed.data as Plan;
  const tls: LoadedPlan['tls'] = {};
  for (const [i, target] of plan.targets.entries()) {
    if (!target.tls) continue;
    const { ca: _, ...rest } = target.tls;
    const caPem = ca.pems.get(i);
    tls[target.name] = { ...rest, ...(caPem ? { caPem } : {}) };
  }
  return { plan, file, tls };
}

/** Every target's `tls.ca` file read into PEM (by target index), from the plan as written. */
async function readCaFiles(
  data: unknown,
  doc: Document,
  file: string,
  at: (o: number) => { line: number; col: number },
) {
  const pems = new Map<number, string>();
  const problems: PlanProblem[] = [];
  const targets = (data as { targets?: unknown } | null)?.targets;
  for (const [i, target] of (Array.isArray(targets) ? targets : []).entries()) {
    const ca = (target as { tls?: { ca?: unknown } } | null)?.tls?.ca;
    if (typeof ca !== 'string' || ca === '') continue;
    const caPath = path.resolve(path.dirname(file), ca);
    const fieldPath = ['targets', i, 'tls', 'ca'];
    const shown = path.relative(process.cwd(), caPath);
    try {
      const caPem = await readFile(caPath, 'utf8');
      if (caPem.includes('-----BEGIN CERTIFICATE-----')) pems.set(i, caPem);
      else problems.push(problemAt(doc, fieldPath, file, at, `${shown} holds no PEM certificate`));
    } catch (err) {
      problems.push(
        problemAt(
          doc,
          fieldPath,
          file,
          at,
          `cannot read CA file ${shown}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        ),
      );
    }
  }
  return { pems, problems };
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
 * text, with a warning on stderr), and aliases must resolve within the YAML library's bound on
 * their expansion (a "billion laughs" document): both are refused where they are written.
 */
function toPlainData(doc: Document, file: string, at: (o: number) => { line: number; col: number }): unknown {
  const problems: PlanProblem[] = [];
  let firstAlias: Node | undefined;
  const problem = (node: Node, message: string) => {
    const { line, col } = at(node.range?.[0] ?? 0);
    problems.push({ file, line, column: col, field: '', message });
  };
  visit(doc, {
    Pair(_, pair) {
      if (isCollection(pair.key)) problem(pair.key, 'YAML: a key must be a plain name, not a list or mapping');
    },
    Alias(_, alias) {
      firstAlias ??= alias;
    },
  });
  if (problems.length > 0) throw new PlanError(problems);
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_EXPANSIONS });
  } catch (err) {
    // The YAML library's errors here are about aliases (unresolved, or expanding too much).
    problem(firstAlias ?? doc.contents!, `YAML: ${(err as Error).message}`);
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
      return { file, line, column: col, field, message: `unknown field "${key}"` };
    });
  }
  return [problemAt(doc, issue.path, file, at, messageOf(issue, valueAt(data, issue.path)))];
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
