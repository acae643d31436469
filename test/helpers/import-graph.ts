// The repository's import graph between files, read from the sources (not dist/), and the two rules
// it is held to: no cycles, and no import from a lower layer to a higher one (docs/architecture.md,
// "Layers"). TypeScript's preProcessFile lists every `import`, `import type`, `export … from` and
// literal `import('…')` without type-checking, so reading ~400 files takes well under a second.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Folders from the lowest layer up. A file may import its own folder and the folders of lower
 * layers; folders of one layer are independent of each other. */
export const LAYERS: readonly (readonly string[])[] = [
  ['contracts'],
  ['common'],
  ['metrics', 'lab', 'dashboards'],
  ['worker'],
  ['coordinator'],
  ['regions'],
  ['cli'],
];
/** Entry points above every layer: they may import anything, and each other (benchmarks reuse test helpers). */
export const ENTRY_POINTS: readonly string[] = ['bin', 'bench', 'test'];

/** File (relative to the root, with `/`) -> the repository files it imports. */
export type ImportGraph = Map<string, Set<string>>;

function sourceFiles(root: string, dir: string): string[] {
  if (!existsSync(path.join(root, dir))) return [];
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return sourceFiles(root, rel);
    return /\.(ts|js)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** `./x.js` in a TypeScript file names `./x.ts` (NodeNext resolution). */
function resolveImport(root: string, from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined; // a package or node: builtin
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  const asTs = target.replace(/\.js$/, '.ts');
  if (from.endsWith('.ts') && existsSync(path.join(root, asTs))) return asTs;
  return target;
}

export function readImportGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const folder of [...LAYERS.flat(), ...ENTRY_POINTS]) {
    for (const file of sourceFiles(root, folder)) {
      const { importedFiles } = ts.preProcessFile(readFileSync(path.join(root, file), 'utf8'), true, true);
      const targets = importedFiles.flatMap((i) => resolveImport(root, file, i.fileName) ?? []);
      graph.set(file, new Set(targets));
    }
  }
  return graph;
}

/** Rank of a file's top folder; entry points rank above every layer, other files (dist/) have none. */
function rankOf(file: string): number | undefined {
  const folder = file.split('/')[0]!;
  if (ENTRY_POINTS.includes(folder)) return LAYERS.length;
  const rank = LAYERS.findIndex((layer) => layer.includes(folder));
  return rank < 0 ? undefined : rank;
}

/** Every import that goes up a layer, or sideways to another folder of the same layer, as "from -> to". */
export function layerViolations(graph: ImportGraph): string[] {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    const fromRank = rankOf(from)!;
    if (fromRank === LAYERS.length) continue;
    for (const to of targets) {
      const toRank = rankOf(to);
      const sameFolder = from.split('/')[0] === to.split('/')[0];
      if (!sameFolder && (toRank === undefined || toRank >= fromRank)) found.push(`${from} -> ${to}`);
    }
  }
  return found.sort();
}

/** Strongly connected components of more than one file (or a file importing itself), each sorted;
 * Tarjan's algorithm, iterative so that a deep chain of imports cannot overflow the stack. */
export function importCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { file: string; targets: Iterator<string> }[] = [];
    const enter = (file: string) => {
      index.set(file, next);
      low.set(file, next++);
      stack.push(file);
      onStack.add(file);
      work.push({ file, targets: (graph.get(file) ?? new Set<string>()).values() });
    };
    enter(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const step = top.targets.next();
      if (!step.done) {
        const to = step.value;
        if (!graph.has(to)) continue;
        if (!index.has(to)) enter(to);
        else if (onStack.has(to)) low.set(top.file, Math.min(low.get(top.file)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.file, Math.min(low.get(parent.file)!, low.get(top.file)!));
      if (low.get(top.file) !== index.get(top.file)) continue;
      const component: string[] = [];
      let file: string;
      do {
        file = stack.pop()!;
        onStack.delete(file);
        component.push(file);
      } while (file !== top.file);
      if (component.length > 1 || graph.get(top.file)!.has(top.file)) cycles.push(component.sort());
    }
  }
  return cycles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}
