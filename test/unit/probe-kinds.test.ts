// What the compiler cannot see about a probe kind (docs/adding-a-probe.md, "Checked by a test"):
// for every kind in contracts/probes/index.ts, a section of docs/probes.md, an example plan that
// runs it against the lab, a dashboard panel, and an integration test against the lab.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { isLabUrl } from '../../contracts/lab-roles.js';
import { PROBE_JOB_METRICS, PROBE_METRICS, RUN_METRICS } from '../../contracts/metric-names.js';
import { PROBE_KINDS, type ProbeKind } from '../../contracts/probes/index.js';
import { DASHBOARDS } from '../../dashboards/src/dashboards.js';
import { REPO_ROOT } from '../helpers/repo.js';

/** What the checks read: docs/probes.md, the example plans, the panels' queries, the integration tests. */
interface Sources {
  probesDoc: string;
  examples: { file: string; text: string }[];
  queries: { panel: string; expr: string }[];
  integrationTests: { file: string; text: string }[];
}

/** Every metric of a probe (PROBE_METRICS), by name, that no other probe produces. */
function ownMetrics(kind: ProbeKind): string[] {
  const names = (k: ProbeKind) => [
    ...Object.keys(PROBE_METRICS[k].job).map((m) => PROBE_JOB_METRICS[m as keyof typeof PROBE_JOB_METRICS].name),
    ...Object.keys(PROBE_METRICS[k].run).map((m) => RUN_METRICS[m as keyof typeof RUN_METRICS].name),
  ];
  const others = new Set(PROBE_KINDS.filter((k) => k !== kind).flatMap(names));
  return names(kind).filter((name) => !others.has(name));
}

/** Does a query select this probe by its label (`probe="cors"`, `probe=~"cors|drain"`)? */
function selectsProbe(expr: string, kind: ProbeKind): boolean {
  return [...expr.matchAll(/\bprobe\s*(=~|=)\s*"([^"]*)"/g)].some(([, op, value]) =>
    op === '=' ? value === kind : new RegExp(`^(?:${value})$`).test(kind),
  );
}

/** A heading (## or ###) naming the probe as a word: "## Compression, CORS and drain", "## The load probe". */
const hasDocSection = (doc: string, kind: ProbeKind) =>
  doc.split('\n').some((line) => /^#{2,3} /.test(line) && new RegExp(`\\b${kind}\\b`, 'i').test(line));

/** Example plans with an experiment of this probe on a `lab:` target (so `run --lab` runs it). */
function labExamples(examples: Sources['examples'], kind: ProbeKind): string[] {
  return examples
    .filter(({ text }) => {
      const plan = parse(text) as {
        targets?: { name: string; url: string }[];
        experiments?: { probe: string; targets?: string[] }[];
      };
      const urls = new Map((plan.targets ?? []).map((t) => [t.name, t.url]));
      return (plan.experiments ?? []).some(
        (e) => e.probe === kind && (e.targets ?? [...urls.keys()]).some((name) => isLabUrl(urls.get(name) ?? '')),
      );
    })
    .map(({ file }) => file);
}

/** What is missing for one probe kind, one sentence each; empty when nothing is. */
function missingFor(kind: ProbeKind, sources: Sources): string[] {
  const missing: string[] = [];
  if (!hasDocSection(sources.probesDoc, kind))
    missing.push(`docs/probes.md has no "## ..." or "### ..." heading naming ${kind}`);
  // metrics-lab.yaml runs every probe for the metric catalogue; an example shows one off.
  const examples = labExamples(sources.examples, kind).filter((file) => file !== 'metrics-lab.yaml');
  if (examples.length === 0)
    missing.push(`no example plan in examples/ (besides metrics-lab.yaml) runs ${kind} against a lab: target`);
  const own = ownMetrics(kind);
  if (!sources.queries.some(({ expr }) => selectsProbe(expr, kind) || own.some((m) => expr.includes(m))))
    missing.push(
      `no dashboard panel (dashboards/src/dashboards.ts) selects probe="${kind}" or reads its own metrics (${own.join(', ') || 'none'})`,
    );
  const labTest = sources.integrationTests.find(({ file }) => file === `${kind}-probe.test.ts`);
  if (!labTest) missing.push(`no test/integration/${kind}-probe.test.ts`);
  else if (!labTest.text.includes('labForThisFile('))
    missing.push(`test/integration/${kind}-probe.test.ts does not run the probe against the lab (labForThisFile)`);
  return missing;
}

async function readDir(dir: string, suffix: string): Promise<{ file: string; text: string }[]> {
  const files = (await readdir(path.join(REPO_ROOT, dir))).filter((f) => f.endsWith(suffix)).sort();
  return Promise.all(
    files.map(async (file) => ({ file, text: await readFile(path.join(REPO_ROOT, dir, file), 'utf8') })),
  );
}

async function repoSources(): Promise<Sources> {
  return {
    probesDoc: await readFile(path.join(REPO_ROOT, 'docs/probes.md'), 'utf8'),
    examples: await readDir('examples', '.yaml'),
    queries: DASHBOARDS.flatMap((d) =>
      d.panels.flatMap((p) => p.queries.map((q) => ({ panel: `${d.title}: ${p.title}`, expr: q.expr }))),
    ),
    integrationTests: await readDir('test/integration', '.test.ts'),
  };
}

test('every probe kind has its docs section, a lab example plan, a dashboard panel and a lab test', async () => {
  const sources = await repoSources();
  const missing = PROBE_KINDS.flatMap((kind) => missingFor(kind, sources).map((m) => `${kind}: ${m}`));
  assert.deepEqual(missing, [], `see docs/adding-a-probe.md:\n${missing.join('\n')}`);
});

test('the check fails for each piece taken away', async () => {
  const sources = await repoSources();
  const kind: ProbeKind = 'drain';
  const without = (changes: Partial<Sources>) => missingFor(kind, { ...sources, ...changes });
  assert.match(
    without({
      probesDoc: sources.probesDoc.replace(/^## Compression, CORS and drain$/m, '## Compression and CORS'),
    }).join(),
    /docs\/probes\.md has no .* heading naming drain/,
  );
  assert.match(
    without({ examples: sources.examples.filter((e) => e.file !== 'go-drain.yaml') }).join(),
    /no example plan in examples\/ .* runs drain/,
  );
  assert.match(
    without({
      queries: sources.queries.filter((q) => !q.expr.includes('probe="drain"') && !q.expr.includes('drain')),
    }).join(),
    /no dashboard panel .* probe="drain"/,
  );
  assert.match(
    without({ integrationTests: sources.integrationTests.filter((t) => t.file !== 'drain-probe.test.ts') }).join(),
    /no test\/integration\/drain-probe\.test\.ts/,
  );
});
