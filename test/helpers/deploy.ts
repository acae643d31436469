// What the deployment tests read: deploy/compose.yaml as Compose sees it (merge keys, `${VAR:-default}`
// with the defaults), the environment variables the code reads, the Dockerfile's instructions,
// and a small kustomize for the features deploy/k8s uses.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { REPO_ROOT } from './repo.js';
import bundleScript from '../../cli/bundle-script.cjs';

export const DEPLOY_DIR = path.join(REPO_ROOT, 'deploy');
export const K8S_DIR = path.join(DEPLOY_DIR, 'k8s');

export type Yaml = Record<string, unknown>;

export function isObject(value: unknown): value is Yaml {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function readYaml(file: string): unknown {
  return parse(readFileSync(file, 'utf8'), { merge: true });
}

// ---- Compose ------------------------------------------------------------------------------

export interface ComposeService {
  name: string;
  image?: string;
  command: string[];
  environment: Record<string, string>;
  /** Bind mounts: container path -> absolute host path (named volumes left out). */
  binds: Map<string, string>;
  raw: Yaml;
}

/** Compose's interpolation where the variable is unset: `${X:-default}` and `${X-default}` give the default, `${X}` "". */
export function interpolateDefaults(value: string): string {
  return value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g,
    (_, _name, fallback: string | undefined) => fallback ?? '',
  );
}

export function loadCompose(file = path.join(DEPLOY_DIR, 'compose.yaml')): Map<string, ComposeService> {
  const doc = readYaml(file);
  if (!isObject(doc) || !isObject(doc.services)) throw new Error(`${file}: no services`);
  const services = new Map<string, ComposeService>();
  for (const [name, raw] of Object.entries(doc.services)) {
    if (!isObject(raw)) throw new Error(`${file}: service ${name} is not a mapping`);
    const environment: Record<string, string> = {};
    if (isObject(raw.environment)) {
      for (const [key, value] of Object.entries(raw.environment))
        environment[key] = interpolateDefaults(String(value ?? ''));
    } else if (raw.environment !== undefined) {
      throw new Error(`${file}: ${name}.environment: write it as a mapping`);
    }
    const binds = new Map<string, string>();
    for (const volume of (raw.volumes as unknown[] | undefined) ?? []) {
      const [source, target] = String(volume).split(':');
      if (source!.startsWith('.') || source!.startsWith('/'))
        binds.set(target!, path.resolve(path.dirname(file), source!));
    }
    const command =
      raw.command === undefined
        ? []
        : Array.isArray(raw.command)
          ? raw.command.map(String)
          : String(raw.command).split(/\s+/);
    services.set(name, {
      name,
      ...(typeof raw.image === 'string' ? { image: raw.image } : {}),
      command,
      environment,
      binds,
      raw,
    });
  }
  return services;
}

/** The host file behind a container path, through the service's bind mounts (a file or anything under a mounted directory). */
export function hostPathOf(service: ComposeService, containerPath: string): string | undefined {
  for (const [target, source] of service.binds) {
    if (containerPath === target) return source;
    if (containerPath.startsWith(`${target}/`)) return path.join(source, containerPath.slice(target.length + 1));
  }
  return undefined;
}

/** The value after `--name` in a command line. */
export function optionValues(command: string[], name: string): string[] {
  return command.flatMap((arg, i) => (arg === name && i + 1 < command.length ? [command[i + 1]!] : []));
}

// ---- Environment variables the code reads -------------------------------------------------------

/** Code that runs in the image (the Dockerfile copies these); tests, benchmarks and dashboards/src do not. */
const SHIPPED_CODE = ['bin', 'cli', 'common', 'contracts', 'coordinator', 'lab', 'metrics', 'regions', 'worker'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : /\.(ts|js)$/.test(e.name) ? [path.join(dir, e.name)] : [],
  );
}

/** Every `process.env.NAME` (or `process.env['NAME']`) read by the shipped code, with the files that read it. */
export function codeEnvVars(): Map<string, string[]> {
  const vars = new Map<string, string[]>();
  for (const dir of SHIPPED_CODE) {
    for (const file of sourceFiles(path.join(REPO_ROOT, dir))) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/process\.env(?:\.([A-Z_][A-Z0-9_]*)|\[['"]([A-Z_][A-Z0-9_]*)['"]\])/g)) {
        const name = (match[1] ?? match[2])!;
        const where = path.relative(REPO_ROOT, file);
        vars.set(name, [...new Set([...(vars.get(name) ?? []), where])]);
      }
    }
  }
  return vars;
}

// ---- Dockerfile ---------------------------------------------------------------------------------

export interface DockerInstruction {
  keyword: string;
  args: string;
  stage: string;
}

/** The Dockerfile's instructions (continuations joined, comments dropped), each with its stage's name. */
export function readDockerfile(file = path.join(REPO_ROOT, 'Dockerfile')): DockerInstruction[] {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => !/^\s*#/.test(l));
  const joined = lines
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '');
  let stage = '';
  return joined.map((line) => {
    const [, keyword, args] = /^\s*(\S+)\s*(.*)$/.exec(line)!;
    if (keyword!.toUpperCase() === 'FROM') stage = /\bAS\s+(\S+)/i.exec(args!)?.[1] ?? '';
    return { keyword: keyword!.toUpperCase(), args: args!.trim(), stage };
  });
}

/** An exec-form instruction's argument list (JSON); throws for the shell form. */
export function execForm(instruction: DockerInstruction): string[] {
  const json = instruction.args.replace(/^CMD\s+|^(--\S+\s+)+CMD\s+/, '');
  if (!json.startsWith('[')) throw new Error(`${instruction.keyword} ${instruction.args}: not the exec form`);
  return JSON.parse(json) as string[];
}

// ---- A small kustomize --------------------------------------------------------------------------

export interface Manifest extends Yaml {
  apiVersion: string;
  kind: string;
  metadata: Yaml & { name: string };
}

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'patches', 'configMapGenerator']);
/** Strategic merge keys of the lists deploy/k8s patches (as in the Kubernetes API's patchMergeKey). */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  volumes: 'name',
  env: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
};

export function readManifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      return doc.toJS({ maxAliasCount: 100 }) as unknown;
    })
    .filter((doc) => doc !== null)
    .map((doc) => {
      if (
        !isObject(doc) ||
        typeof doc.apiVersion !== 'string' ||
        typeof doc.kind !== 'string' ||
        !isObject(doc.metadata) ||
        typeof doc.metadata.name !== 'string'
      ) {
        throw new Error(`${file}: a document without apiVersion, kind and metadata.name`);
      }
      return doc as Manifest;
    });
}

function strategicMerge(base: unknown, patch: unknown, key = ''): unknown {
  if (isObject(patch) && '$patch' in patch)
    throw new Error(`$patch directives are not supported by this render (at ${key})`);
  if (Array.isArray(patch)) {
    const mergeKey = MERGE_KEYS[key];
    if (!mergeKey || !Array.isArray(base)) return patch;
    const merged = [...base];
    for (const item of patch) {
      const at = merged.findIndex((b) => isObject(b) && isObject(item) && b[mergeKey] === item[mergeKey]);
      if (at === -1) merged.push(item);
      else merged[at] = strategicMerge(merged[at], item, key);
    }
    return merged;
  }
  if (isObject(patch) && isObject(base)) {
    const merged: Yaml = { ...base };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete merged[k];
      else merged[k] = strategicMerge(base[k], v, k);
    }
    return merged;
  }
  return patch;
}

/** Replaces references to generated ConfigMaps (volumes, envFrom, configMapKeyRef) by their hashed names. */
function renameConfigMapRefs(value: unknown, names: Map<string, string>, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => renameConfigMapRefs(v, names, key));
  if (!isObject(value)) return value;
  const out: Yaml = {};
  for (const [k, v] of Object.entries(value)) out[k] = renameConfigMapRefs(v, names, k);
  if (
    ['configMap', 'configMapRef', 'configMapKeyRef'].includes(key) &&
    typeof out.name === 'string' &&
    names.has(out.name)
  )
    out.name = names.get(out.name);
  return out;
}

export interface Rendered {
  manifests: Manifest[];
  /** Names of the generated ConfigMaps before their hash suffix. */
  generated: string[];
}

/**
 * Renders a kustomization directory like `kustomize build` for resources (files and
 * directories), strategic-merge `patches` (by path; target: the patch's kind and name) and
 * `configMapGenerator` (files; a content hash suffix on the name and the references to it).
 * Any other field is an error: extend this rather than render something else.
 */
export function renderKustomization(dir: string): Rendered {
  const file = path.join(dir, 'kustomization.yaml');
  const k = readYaml(file);
  if (!isObject(k)) throw new Error(`${file}: not a mapping`);
  const unsupported = Object.keys(k).filter((f) => !KUSTOMIZATION_FIELDS.has(f));
  if (unsupported.length > 0)
    throw new Error(`${file}: ${unsupported.join(', ')}: not supported by test/helpers/deploy.ts's render`);
  let manifests: Manifest[] = [];
  const generated: string[] = [];
  for (const resource of (k.resources as string[] | undefined) ?? []) {
    const at = path.join(dir, resource);
    if (!existsSync(at)) throw new Error(`${file}: resource ${resource} does not exist`);
    if (statSync(at).isDirectory()) {
      const inner = renderKustomization(at);
      manifests.push(...inner.manifests);
      generated.push(...inner.generated);
    } else {
      manifests.push(...readManifests(at));
    }
  }
  const renames = new Map<string, string>();
  for (const generator of (k.configMapGenerator as Yaml[] | undefined) ?? []) {
    const name = String(generator.name);
    const data = Object.fromEntries(
      ((generator.files as string[] | undefined) ?? []).map((f) => [
        path.basename(f),
        readFileSync(path.join(dir, f), 'utf8'),
      ]),
    );
    const hash = createHash('sha256').update(JSON.stringify({ name, data })).digest('hex').slice(0, 10);
    renames.set(name, `${name}-${hash}`);
    generated.push(name);
    manifests.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-${hash}` }, data });
  }
  manifests = manifests.map((m) => renameConfigMapRefs(m, renames) as Manifest);
  for (const patch of (k.patches as Yaml[] | undefined) ?? []) {
    if (typeof patch.path !== 'string' || Object.keys(patch).length !== 1)
      throw new Error(`${file}: only patches given by path are supported`);
    for (const p of readManifests(path.join(dir, patch.path))) {
      const at = manifests.findIndex((m) => m.kind === p.kind && m.metadata.name === p.metadata.name);
      if (at === -1)
        throw new Error(
          `${file}: patch ${patch.path} targets ${p.kind}/${p.metadata.name}, which is not among the resources`,
        );
      manifests[at] = strategicMerge(manifests[at], p) as Manifest;
    }
  }
  return { manifests, generated };
}

/** The pod templates' containers (init containers too) of the workloads in a render. */
export function podSpecs(manifests: Manifest[]): { owner: Manifest; spec: Yaml; labels: Yaml }[] {
  return manifests.flatMap((m) => {
    const template = isObject(m.spec) && isObject(m.spec.template) ? m.spec.template : undefined;
    if (!template || !isObject(template.spec)) return [];
    return [
      {
        owner: m,
        spec: template.spec,
        labels: isObject(template.metadata) && isObject(template.metadata.labels) ? template.metadata.labels : {},
      },
    ];
  });
}

export function containersOf(spec: Yaml): Yaml[] {
  return [...((spec.initContainers as Yaml[] | undefined) ?? []), ...((spec.containers as Yaml[] | undefined) ?? [])];
}

// ---- What a script needs at run time ------------------------------------------------------------

/** Relative module specifiers (import, require) and `new URL('...', import.meta.url)` paths in a
 * compiled file (group 1), and `path.join(__dirname, '...')` paths in a CommonJS one (group 2). */
const RELATIVE_REFERENCE =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\(\s*|\bnew URL\(\s*)['"](\.{1,2}\/[^'"]+)['"]|\bpath\.join\(\s*__dirname,\s*['"]([^'"]+)['"]/g;

/**
 * Every repository file a script loads, following relative imports and requires, `new URL(...,
 * import.meta.url)` and `path.join(__dirname, ...)` from `entry` (an absolute path), with the
 * package.json nearest each (its `type` makes a .js file CommonJS or an ES module); paths relative
 * to the repository root. Packages in node_modules are left out (the image installs them with npm ci).
 */
function nearestPackageJson(directory: string): string {
  const here = path.join(directory, 'package.json');
  return existsSync(here) || path.relative(REPO_ROOT, directory) === ''
    ? here
    : nearestPackageJson(path.dirname(directory));
}

export function runtimeFiles(entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    const relative = path.relative(REPO_ROOT, file);
    if (seen.has(relative)) continue;
    if (!existsSync(file)) throw new Error(`${relative} is referenced but does not exist (npm run build?)`);
    seen.add(relative);
    // The CLI's bundle names files relative to each module it holds: those modules are followed instead.
    if (!/\.c?js$/.test(file) || file === bundleScript.CLI_BUNDLE) continue;
    pending.push(nearestPackageJson(path.dirname(file)));
    for (const match of readFileSync(file, 'utf8').matchAll(RELATIVE_REFERENCE))
      pending.push(path.resolve(path.dirname(file), (match[1] ?? match[2])!));
  }
  return seen;
}
