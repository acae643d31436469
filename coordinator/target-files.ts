// Targets from files (`targetFiles:`, docs/plan.md "Targets from files"): lists of targets in
// Prometheus's file_sd format, JSON or YAML (`[{targets: [...], labels: {...}}]`), read each time
// the plan is loaded and each time its schedule fires, so a run probes what other tooling last
// wrote. Each target string becomes a target of the plan as run: its URL (as written, or
// `host:port` made one with the entry's `scheme` and `path`), a name derived from that URL, its
// labels (the targetFiles entry's, then the file's), and the entry's request settings. The plan
// as run is then checked whole (contracts/plan.ts planAsRunSchema), so a file's target meets the
// same rules as a hand-written one; every problem names the file, the position in it and the
// entry's field, and nothing runs while there is one.
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { Composer, type Document, isMap, isScalar, LineCounter, type Node, Parser } from 'yaml';
import type { JobTls } from '../contracts/job.js';
import { isLabUrl } from '../contracts/lab-roles.js';
import { TARGET_FILE_LIMITS } from '../contracts/limits.js';
import {
  planAsRunSchema,
  DUAL_STACK_SUFFIXES,
  type Plan,
  type RunTarget,
  type TargetFileGroup,
  targetScheme,
  targetUrlProblems,
  type WrittenPlan,
} from '../contracts/plan.js';
import { redactUrl } from '../contracts/secrets.js';
import { labelValueProblem, undeclaredLabelMessage } from '../contracts/target-labels.js';
import { formatIssuePath } from '../common/issue-path.js';
import { jsonErrorOffset } from '../common/json-error-offset.js';
import { readUserTextFile } from '../common/read-bounded-file.js';
import { firstTooBig } from './yaml-bounds.js';
import { thousands } from '../common/plural.js';

/** What reading a plan's target files again needs besides the plan: kept with a schedule. */
export interface TargetFilesSource {
  /** The directory the patterns are relative to: the plan's, absolute. */
  dir: string;
  /** Per targetFiles entry, its TLS settings as jobs carry them (CA and certificate files read into PEM), or null. */
  tls: (JobTls | null)[];
}

/** A problem inside a target file, as a plan's problems are shown: FILE:LINE:COLUMN: FIELD: MESSAGE. */
export interface FileProblem {
  file: string;
  line: number;
  column: number;
  /** `[3].targets[0]`, `[3].labels.team`; empty for the file as a whole. */
  field: string;
  message: string;
}

/** A problem at a field of the plan itself (a pattern that matches no file, a file that cannot be
 * read, an experiment that cannot measure a file's target): the caller knows where that is. */
export interface PlanFieldProblem {
  path: (string | number)[];
  message: string;
}

export type TargetFilesProblem = FileProblem | PlanFieldProblem;

export interface ExpandedPlan {
  /** The plan as run: its own targets, then those of its files in file order. */
  plan: Plan;
  /** TLS settings of the https targets from files, by name (their entry's). */
  tls: Record<string, JobTls>;
  /** Every problem; the plan is not to be run when there is one. */
  problems: TargetFilesProblem[];
}

/** Lists and mappings a target file may nest: it needs 3 (the list, an entry, its targets or labels). */
const NESTING_DEPTH = 8;
/** Aliases a YAML target file may expand. */
const MAX_ALIAS_EXPANSIONS = 100;
const ENTRY_FIELDS = ['targets', 'labels'];
const URL_LIKE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const HOST_PORT = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::\d{1,5})?$/;
const LIMIT_TEXT = thousands(TARGET_FILE_LIMITS.targets);

/**
 * A target's name from its URL: host, port (the scheme's default when the URL has none) and path
 * and query, lower case, every run of other characters made "-" (`https://api.example.com/health`
 * is `api-example-com-443-health`); credentials and secret query values are left out, as reports
 * leave them out (contracts/secrets.ts redactUrl). Longer than a name may be, it keeps its first
 * 54 characters and a hash of the URL, so the same URL always has the same name (job ids,
 * comparisons with earlier runs and metric series follow it).
 */
export function targetNameFor(url: string, maxLength = 63): string {
  const shown = redactUrl(url);
  let text = shown;
  if (!isLabUrl(shown) && URL.canParse(shown)) {
    const parsed = new URL(shown);
    const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
    text = `${parsed.hostname}-${port}${parsed.pathname}${parsed.search}`;
  }
  const name =
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'target';
  if (name.length <= maxLength) return name;
  return `${name.slice(0, maxLength - 9).replace(/-+$/, '')}-${createHash('sha256').update(shown).digest('hex').slice(0, 8)}`;
}

/** The URL a target string of a file stands for, or what is wrong with it. */
function targetUrlFor(
  text: string,
  group: Pick<TargetFileGroup, 'scheme' | 'path'>,
): { url: string } | { problem: string } {
  let url: string;
  if (URL_LIKE.test(text)) url = text;
  else if (HOST_PORT.test(text)) url = `${group.scheme}://${text}${group.path}`;
  else if (isLabUrl(text)) url = text;
  else return { problem: `"${text}" is neither host:port nor an http(s):// URL` };
  const problems = targetUrlProblems(url);
  return problems.length > 0 ? { problem: problems.join('; ') } : { url };
}

/** Line and column (1-based) of an offset in a text. */
function lineColumnAt(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: offset - start + 1 };
}

/**
 * Where things are in a target file, for its problems: a YAML file's document, or (a JSON file,
 * which JSON.parse read without positions) the text composed as YAML once a problem needs one.
 */
class Positions {
  private composed?: { doc: Document; lines: LineCounter } | null;

  constructor(
    private readonly text: string,
    composed?: { doc: Document; lines: LineCounter },
  ) {
    this.composed = composed;
  }

  private document(): { doc: Document; lines: LineCounter } | null {
    if (this.composed !== undefined) return this.composed;
    const lines = new LineCounter();
    const tokens = [...new Parser(lines.addNewLine).parse(this.text)];
    // Too deep for the composer's recursion: such a file's problems point at its start.
    const [doc] = firstTooBig(tokens, NESTING_DEPTH, Number.POSITIVE_INFINITY)
      ? []
      : new Composer({ uniqueKeys: false }).compose(tokens, true, this.text.length);
    this.composed = doc ? { doc, lines } : null;
    return this.composed;
  }

  /** The position of the deepest node on the path that exists; `labelKey`: the key of that label, not its value. */
  at(fieldPath: (string | number)[], labelKey?: string): { line: number; column: number } {
    const found = this.document();
    if (!found) return { line: 1, column: 1 };
    const { doc, lines } = found;
    const pos = (node: Node | null | undefined) => {
      if (!node?.range) return undefined;
      const { line, col } = lines.linePos(node.range[0]);
      return { line, column: col };
    };
    if (labelKey !== undefined) {
      const labels = doc.getIn(fieldPath, true);
      const pair = isMap(labels) ? labels.items.find((p) => isScalar(p.key) && p.key.value === labelKey) : undefined;
      const at = pos(pair?.key as Node | undefined);
      if (at) return at;
    }
    for (let depth = fieldPath.length; depth >= 0; depth--) {
      const at = pos(doc.getIn(fieldPath.slice(0, depth), true) as Node | undefined);
      if (at) return at;
    }
    return { line: 1, column: 1 };
  }
}

interface TargetFile {
  /** As problems name it: relative to the working directory. */
  shown: string;
  /** As the plan as run names it (a target's `file`): relative to the plan. */
  relative: string;
  data: unknown;
  positions: Positions;
}

/** Absolute paths of the files a pattern names, sorted; or why there are none. */
async function filesOf(pattern: string, dir: string): Promise<{ files: string[] } | { problem: string }> {
  const resolved = path.resolve(dir, pattern);
  const base = path.basename(resolved);
  if (!base.includes('*')) return { files: [resolved] };
  const parent = path.dirname(resolved);
  const shownDir = path.relative(process.cwd(), parent) || '.';
  let names: string[];
  try {
    names = await readdir(parent);
  } catch (err) {
    return {
      problem: `cannot read directory ${shownDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    };
  }
  const [before, after] = base.split('*');
  const files = names
    .filter((n) => n.length >= before.length + after.length && n.startsWith(before) && n.endsWith(after))
    .sort()
    .map((n) => path.join(parent, n));
  if (files.length === 0) return { problem: `"${pattern}" matches no file in ${shownDir}` };
  return { files };
}

/** A target file's data, or what is wrong: `unreadable` at the plan's pattern, `problems` in the file. */
async function readTargetFile(
  file: string,
  dir: string,
): Promise<TargetFile | { unreadable: string } | { problems: FileProblem[] }> {
  const shown = path.relative(process.cwd(), file) || file;
  const relative = path.relative(dir, file).split(path.sep).join('/');
  const read = await readUserTextFile(file, TARGET_FILE_LIMITS.fileBytes);
  if ('reason' in read) return { unreadable: `cannot read target file ${shown}: ${read.reason}` };
  const { text } = read;
  const problem = (at: { line: number; column: number }, message: string): FileProblem => ({
    file: shown,
    ...at,
    field: '',
    message,
  });
  if (file.endsWith('.json')) {
    try {
      return { shown, relative, data: JSON.parse(text), positions: new Positions(text) };
    } catch (err) {
      // Node 20 says where for some mistakes only; the scan finds the place for every one.
      const message = (err as Error).message;
      const said = /^(.*) in JSON at position (\d+)/s.exec(message);
      const offset = said ? Number(said[2]) : (jsonErrorOffset(text) ?? 0);
      const what = said
        ? said[1]
        : offset >= text.length
          ? 'the text ends too soon'
          : `unexpected ${JSON.stringify(text[offset])}`;
      return { problems: [problem(lineColumnAt(text, offset), `JSON: ${what}`)] };
    }
  }
  const lines = new LineCounter();
  const tokens = [...new Parser(lines.addNewLine).parse(text)];
  const linePos = (offset: number) => {
    const { line, col } = lines.linePos(offset);
    return { line, column: col };
  };
  const tooBig = firstTooBig(tokens, NESTING_DEPTH, TARGET_FILE_LIMITS.targets);
  if (tooBig)
    return {
      problems: [
        problem(
          linePos(tooBig.offset),
          tooBig.problem === 'deep'
            ? `YAML: lists and mappings nested more than ${NESTING_DEPTH} deep (a target file needs 3)`
            : `YAML: a list or mapping of more than ${LIMIT_TEXT} items (the limit on targets from files)`,
        ),
      ],
    };
  const [doc, second] = new Composer({ uniqueKeys: true }).compose(tokens, true, text.length);
  if (second)
    return {
      problems: [
        problem(linePos(second.range[0]), 'YAML: a target file is one document; this one has more (a "---" line)'),
      ],
    };
  if (!doc) return { shown, relative, data: null, positions: new Positions(text) };
  if (doc.errors.length > 0)
    return {
      problems: doc.errors.map((e) =>
        problem(linePos(e.pos[0]), `YAML: ${e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`),
      ),
    };
  try {
    return {
      shown,
      relative,
      data: doc.toJS({ maxAliasCount: MAX_ALIAS_EXPANSIONS }),
      positions: new Positions(text, { doc, lines }),
    };
  } catch (err) {
    return { problems: [problem({ line: 1, column: 1 }, `YAML: ${(err as Error).message}`)] };
  }
}

const describe = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'a list'
      : typeof value === 'object'
        ? 'a mapping'
        : typeof value === 'string'
          ? `"${value}"`
          : String(value);

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Where a file target came from: for the problems the plan as run finds with it. */
interface Origin {
  file: TargetFile;
  entry: number;
  index: number;
}

/**
 * The plan as run: the plan's own targets and those of its target files, each file read, every
 * target checked with the whole plan. `written` is the plan as the loader validated it (bodies read).
 */
export async function expandTargetFiles(written: WrittenPlan, source: TargetFilesSource): Promise<ExpandedPlan> {
  const own = written.targets ?? [];
  const problems: TargetFilesProblem[] = [];
  const fileProblem = (file: TargetFile, fieldPath: (string | number)[], message: string, labelKey?: string) =>
    problems.push({
      file: file.shown,
      ...file.positions.at(labelKey === undefined ? fieldPath : fieldPath.slice(0, -1), labelKey),
      field: fieldPath.length > 0 ? formatIssuePath(fieldPath) : '',
      message,
    });
  const targets: RunTarget[] = [];
  const origins: Origin[] = [];
  const tls: Record<string, JobTls> = {};
  const named = new Map<string, { url: string; where: string }>(
    own.map((t, i) => [t.name, { url: t.url, where: `the plan's targets[${i}]` }]),
  );
  let filesRead = 0;
  let full = false;

  for (const [g, group] of (written.targetFiles ?? []).entries()) {
    const seen = new Set<string>();
    for (const [j, pattern] of group.files.entries()) {
      const where = ['targetFiles', g, 'files', j];
      const matched = await filesOf(pattern, source.dir);
      if ('problem' in matched) {
        problems.push({ path: where, message: matched.problem });
        continue;
      }
      for (const absolute of matched.files) {
        if (seen.has(absolute)) continue;
        seen.add(absolute);
        if (++filesRead > TARGET_FILE_LIMITS.files) {
          problems.push({
            path: where,
            message: `more than ${TARGET_FILE_LIMITS.files} target files (the limit, contracts/limits.ts TARGET_FILE_LIMITS)`,
          });
          break;
        }
        const file = await readTargetFile(absolute, source.dir);
        if ('unreadable' in file) {
          problems.push({ path: where, message: file.unreadable });
          continue;
        }
        if ('problems' in file) {
          problems.push(...file.problems);
          continue;
        }
        if (!Array.isArray(file.data)) {
          fileProblem(
            file,
            [],
            `a target file is a list of {targets: [...], labels: {...}} (Prometheus's file_sd format), got ${describe(file.data)}`,
          );
          continue;
        }
        for (const [e, entry] of file.data.entries()) {
          if (full) break;
          if (!isMapping(entry)) {
            fileProblem(file, [e], `an entry is a mapping {targets: [...], labels: {...}}, got ${describe(entry)}`);
            continue;
          }
          for (const key of Object.keys(entry))
            if (!ENTRY_FIELDS.includes(key))
              fileProblem(file, [e, key], `unknown field "${key}" (fields here: ${ENTRY_FIELDS.join(', ')})`);
          const labels = entryLabels(entry.labels, group, written.targetLabels ?? [], (fieldPath, message, labelKey) =>
            fileProblem(file, [e, ...fieldPath], message, labelKey),
          );
          if (!Array.isArray(entry.targets)) {
            fileProblem(
              file,
              [e, 'targets'],
              entry.targets === undefined ? 'is required' : `expected a list, got ${describe(entry.targets)}`,
            );
            continue;
          }
          for (const [t, text] of entry.targets.entries()) {
            const at = [e, 'targets', t];
            if (typeof text !== 'string') {
              fileProblem(file, at, `expected text (host:port or a URL), got ${describe(text)}`);
              continue;
            }
            const made = targetUrlFor(text, group);
            if ('problem' in made) {
              fileProblem(file, at, made.problem);
              continue;
            }
            // Room for the family suffix of the two targets `ipFamily: both` makes of it.
            const name = targetNameFor(made.url, group.ipFamily === 'both' ? 63 - DUAL_STACK_SUFFIXES[4].length : 63);
            const here = `${file.shown} ${formatIssuePath(at)}`;
            const earlier = named.get(name);
            if (earlier) {
              fileProblem(
                file,
                at,
                earlier.url === made.url
                  ? `"${redactUrl(made.url)}" is listed already (${earlier.where}): a target is listed once`
                  : `"${redactUrl(made.url)}" gets the name "${name}", as "${redactUrl(earlier.url)}" (${earlier.where}) does: ` +
                      'names keep the letters and digits of host, port, path and query; make the URLs differ in those',
              );
              continue;
            }
            if (targets.length >= TARGET_FILE_LIMITS.targets) {
              fileProblem(
                file,
                at,
                `more than ${LIMIT_TEXT} targets from the plan's files (the limit, contracts/limits.ts TARGET_FILE_LIMITS)`,
              );
              full = true;
              break;
            }
            named.set(name, { url: made.url, where: here });
            const https = targetScheme(made.url) === 'https';
            targets.push(fileTarget(name, made.url, labels, group, file.relative, https));
            origins.push({ file, entry: e, index: t });
            const groupTls = source.tls[g];
            if (groupTls && group.tls && targets.at(-1)!.tls) tls[name] = groupTls;
          }
        }
      }
    }
  }
  if (problems.length === 0 && own.length === 0 && targets.length === 0)
    problems.push({ path: ['targetFiles'], message: 'the target files hold no target: a plan needs at least one' });
  const plan = { ...written, targets: [...own, ...targets] } as Plan;
  if (problems.length > 0) return { plan, tls, problems };

  // The plan as run, checked whole: a file's target meets every rule a hand-written one does
  // (labels declared, few values per label, probes that can measure it, settings they apply).
  const checked = planAsRunSchema.safeParse(plan);
  for (const issue of checked.error?.issues ?? []) {
    const [field, index, key, label] = issue.path;
    const origin = field === 'targets' && typeof index === 'number' ? origins[index - own.length] : undefined;
    if (!origin) problems.push({ path: issue.path as (string | number)[], message: issue.message });
    else if (key === 'labels' && typeof label === 'string')
      fileProblem(origin.file, [origin.entry, 'labels', label], issue.message, label);
    else fileProblem(origin.file, [origin.entry, 'targets', origin.index], issue.message);
  }
  return { plan, tls, problems: distinctProblems(problems) };
}

/**
 * A file entry's labels over its targetFiles entry's. `__meta_*` labels (what service discovery
 * writes for relabeling) are left out, as Prometheus drops them; any other `__` label (such as
 * `__scheme__`) would change the target in Prometheus and is refused rather than ignored.
 */
function entryLabels(
  raw: unknown,
  group: TargetFileGroup,
  declared: readonly string[],
  problem: (fieldPath: (string | number)[], message: string, labelKey?: string) => void,
): Record<string, string> {
  const labels: Record<string, string> = { ...group.labels };
  if (raw === undefined) return labels;
  if (!isMapping(raw)) {
    problem(['labels'], `expected a mapping of label names to values, got ${describe(raw)}`);
    return labels;
  }
  for (const [name, value] of Object.entries(raw)) {
    if (name.startsWith('__meta_')) continue;
    if (name.startsWith('__')) {
      problem(
        ['labels', name],
        `"${name}" is a Prometheus relabeling label, which probefleet does not read: write the target as a URL, or set the targetFiles entry's scheme and path`,
        name,
      );
      continue;
    }
    const valueProblem = labelValueProblem(value);
    if (!declared.includes(name)) problem(['labels', name], undeclaredLabelMessage(name, declared), name);
    else if (valueProblem) problem(['labels', name], valueProblem);
    else labels[name] = value as string;
  }
  return labels;
}

/** A target of the plan as run from a file: every request setting of its entry (whatever settings a
 * target gains, an entry has them too: the entry's schema is the target's), TLS on https targets only. */
function fileTarget(
  name: string,
  url: string,
  labels: Record<string, string>,
  group: TargetFileGroup,
  file: string,
  https: boolean,
): RunTarget {
  const { name: entry, files: _files, scheme: _scheme, path: _path, labels: _labels, tls, ...settings } = group;
  return {
    name,
    url,
    ...settings,
    ...(tls && https ? { tls } : {}),
    ...(Object.keys(labels).length > 0 ? { labels } : {}),
    file,
    ...(entry ? { group: entry } : {}),
  };
}

/** A problem the plan as run finds once per target of an entry (an undeclared label) is said once. */
function distinctProblems(problems: TargetFilesProblem[]): TargetFilesProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = JSON.stringify(p);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The plan as written, from a plan as run: its own targets, without those its files gave. */
export function writtenPlanOf(plan: Plan): WrittenPlan {
  const own = plan.targets.filter((t) => t.file === undefined);
  const { targets: _, ...rest } = plan;
  return { ...rest, ...(own.length > 0 ? { targets: own } : {}) } as WrittenPlan;
}

/** Whether a problem is in a target file (else at a field of the plan). */
export function isFileProblem(problem: TargetFilesProblem): problem is FileProblem {
  return 'file' in problem;
}
