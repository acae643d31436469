// Reads a plan file: YAML with positions, validated against contracts/plan.ts. Every problem
// is reported as FILE:LINE:COL: FIELD: MESSAGE, all of them at once, and nothing runs.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isMap, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { z } from 'zod';
import type { JobTls } from '../contracts/job.js';
import { planSchema, type Plan } from '../contracts/plan.js';
import { PROBE_KINDS } from '../contracts/probes/index.js';
import { formatIssuePath } from '../common/issue-path.js';

export interface PlanProblem {
  file: string;
  line: number;
  column: number;
  /** `targets[0].url`, or empty for a YAML syntax error. */
  field: string;
  message: string;
}

export class PlanError extends Error {
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
    throw new PlanError([{ file, line: 1, column: 1, field: '', message: `cannot read plan: ${(err as Error).message}` }]);
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
        return { file, line, column: col, field: '', message: `YAML: ${e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}` };
      }),
    );
  }
  const data: unknown = doc.toJS();
  if (!isMap(doc.contents)) {
    throw new PlanError([{ file, line: 1, column: 1, field: '', message: 'a plan is a YAML mapping (name, targets, experiments, ...)' }]);
  }

  const parsed = planSchema.safeParse(data);
  if (!parsed.success) {
    throw new PlanError(parsed.error.issues.flatMap((issue) => problemsOf(issue, doc, file, at, data)));
  }
  const plan = parsed.data as Plan;
  return { plan, file, tls: await readTlsFiles(plan, doc, file, at) };
}

async function readTlsFiles(plan: Plan, doc: Document, file: string, at: (o: number) => { line: number; col: number }) {
  const tls: LoadedPlan['tls'] = {};
  const problems: PlanProblem[] = [];
  for (const [i, target] of plan.targets.entries()) {
    if (!target.tls) continue;
    const { ca, ...rest } = target.tls;
    let caPem: string | undefined;
    if (ca) {
      const caPath = path.resolve(path.dirname(file), ca);
      const fieldPath = ['targets', i, 'tls', 'ca'];
      try {
        caPem = await readFile(caPath, 'utf8');
        if (!caPem.includes('-----BEGIN CERTIFICATE-----')) {
          problems.push(problemAt(doc, fieldPath, file, at, `${path.relative(process.cwd(), caPath)} holds no PEM certificate`));
        }
      } catch (err) {
        const shown = path.relative(process.cwd(), caPath);
        problems.push(problemAt(doc, fieldPath, file, at, `cannot read CA file ${shown}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`));
      }
    }
    tls[target.name] = { ...rest, ...(caPem ? { caPem } : {}) };
  }
  if (problems.length > 0) throw new PlanError(problems);
  return tls;
}

type Issue = z.core.$ZodIssue;

function problemsOf(issue: Issue, doc: Document, file: string, at: (o: number) => { line: number; col: number }, data: unknown): PlanProblem[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => {
      const parent = doc.getIn(issue.path, true);
      const pair = isMap(parent) ? parent.items.find((p) => (p.key as { value?: unknown })?.value === key) : undefined;
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
