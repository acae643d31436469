// What the compiler cannot see about a probe kind (docs/adding-a-probe.md, "Checked by a test"):
// for every kind in contracts/probes/index.ts, a section of docs/probes.md, its details in
// docs/result-json.md, its row in plan.md's request table, an example plan that runs it against
// the lab and an experiment in metrics-lab.yaml, a dashboard panel, its finding rules with their
// table-driven test (every code of its contract made by code and met by a test), and an
// integration test against the lab.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { isLabUrl } from '../../contracts/lab-roles.js';
import { PROBE_JOB_METRICS, probeMetricsOf, RUN_METRICS } from '../../contracts/metric-names.js';
import { PROBE_KINDS, PROBES, type ProbeKind } from '../../contracts/probes/index.js';
import { DASHBOARDS } from '../../dashboards/src/dashboards.js';
import { REPO_ROOT } from '../helpers/repo.js';

/** What the checks read: docs/probes.md, the example plans, the panels' queries, the integration tests. */
interface Sources {
  probesDoc: string;
  resultJsonDoc: string;
  planDoc: string;
  /** worker/ and coordinator/ sources, where finding codes are made. */
  code: { file: string; text: string }[];
  unitTests: { file: string; text: string }[];
  examples: { file: string; text: string }[];
  queries: { panel: string; expr: string }[];
  integrationTests: { file: string; text: string }[];
}

/** Every metric of a probe (probeMetricsOf), by name, that no other probe produces. */
function ownMetrics(kind: ProbeKind): string[] {
  const names = (k: ProbeKind) => [
    ...Object.keys(probeMetricsOf(k).job).map((m) => PROBE_JOB_METRICS[m as keyof typeof PROBE_JOB_METRICS].name),
    ...Object.keys(probeMetricsOf(k).run).map((m) => RUN_METRICS[m as keyof typeof RUN_METRICS].name),
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

/** plan.md's table of what each probe applies of a target's request: a row naming the probe. */
const hasRequestRow = (planDoc: string, kind: ProbeKind) => {
  const section = planDoc.split(/^## /m).find((part) => part.startsWith('Methods, bodies and response checks')) ?? '';
  return section.split('\n').some((line) => line.startsWith('| ') && line.split('|')[1].includes(`\`${kind}\``));
};

/** The finding rules of a probe and their test, and every code of its contract made in code and met by a test. */
function missingFindings(kind: ProbeKind, sources: Sources): string[] {
  const codes = Object.keys(PROBES[kind].findings ?? {});
  if (codes.length === 0) return [];
  const missing: string[] = [];
  if (!sources.code.some(({ file }) => file === `worker/probes/${kind}-findings.ts`))
    missing.push(`no worker/probes/${kind}-findings.ts with its finding rules`);
  const ruleTest = sources.unitTests.find(({ file }) => file === `${kind}-findings.test.ts`);
  if (!ruleTest) missing.push(`no test/unit/${kind}-findings.test.ts (the table of its rules' cases)`);
  for (const code of codes) {
    if (!sources.code.some(({ text }) => text.includes(`'${code}'`)))
      missing.push(`finding ${code} is in its contract, but no rule in worker/ or coordinator/ makes it`);
    if (!sources.unitTests.some(({ text }) => text.includes(code))) missing.push(`finding ${code} has no unit test`);
  }
  return missing;
}

/** What is missing for one probe kind, one sentence each; empty when nothing is. */
function missingFor(kind: ProbeKind, sources: Sources): string[] {
  const missing: string[] = [];
  if (!sources.resultJsonDoc.split('\n').some((line) => line.includes('details') && line.includes(`\`${kind}\``)))
    missing.push(`docs/result-json.md does not say what the details of ${kind} hold (a heading or row naming it)`);
  if (PROBES[kind].request && !hasRequestRow(sources.planDoc, kind))
    missing.push(`docs/plan.md, "Methods, bodies and response checks", has no row naming ${kind}`);
  const metricsLab = sources.examples.find((e) => e.file === 'metrics-lab.yaml');
  if (!metricsLab || !labExamples([metricsLab], kind).length)
    missing.push(`examples/metrics-lab.yaml has no experiment of ${kind} on a lab: target`);
  missing.push(...missingFindings(kind, sources));
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

/** The .ts files under a folder, by path from the repository root. */
async function readTree(dir: string): Promise<{ file: string; text: string }[]> {
  const entries = await readdir(path.join(REPO_ROOT, dir), { recursive: true });
  const files = entries.filter((f) => f.endsWith('.ts')).sort();
  return Promise.all(
    files.map(async (f) => ({ file: `${dir}/${f}`, text: await readFile(path.join(REPO_ROOT, dir, f), 'utf8') })),
  );
}

async function repoSources(): Promise<Sources> {
  const doc = (file: string) => readFile(path.join(REPO_ROOT, 'docs', file), 'utf8');
  return {
    probesDoc: await doc('probes.md'),
    resultJsonDoc: await doc('result-json.md'),
    planDoc: await doc('plan.md'),
    code: [...(await readTree('worker')), ...(await readTree('coordinator'))],
    unitTests: await readDir('test/unit', '.test.ts'),
    examples: await readDir('examples', '.yaml'),
    queries: DASHBOARDS.flatMap((d) =>
      d.panels.flatMap((p) => p.queries.map((q) => ({ panel: `${d.title}: ${p.title}`, expr: q.expr }))),
    ),
    integrationTests: await readDir('test/integration', '.test.ts'),
  };
}

test('every probe kind has its docs, request row, example plans, dashboard panel, finding rules with their test, and a lab test', async () => {
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
  assert.match(
    without({ resultJsonDoc: sources.resultJsonDoc.replaceAll('`drain`', '`drained`') }).join(),
    /docs\/result-json\.md does not say what the details of drain hold/,
  );
  assert.match(
    without({ planDoc: sources.planDoc.replaceAll('`drain`', 'drain') }).join(),
    /docs\/plan\.md, "Methods, bodies and response checks", has no row naming drain/,
  );
  assert.match(
    without({
      examples: sources.examples.map((e) =>
        e.file === 'metrics-lab.yaml' ? { ...e, text: e.text.replaceAll('probe: drain', 'probe: reuse') } : e,
      ),
    }).join(),
    /examples\/metrics-lab\.yaml has no experiment of drain/,
  );
  assert.match(
    without({ code: sources.code.filter((c) => c.file !== 'worker/probes/drain-findings.ts') }).join(),
    /no worker\/probes\/drain-findings\.ts .*finding UNREAD_BODY_BREAKS_REUSE is in its contract, but no rule/,
  );
  assert.match(
    without({ unitTests: sources.unitTests.filter((t) => t.file !== 'drain-findings.test.ts') }).join(),
    /no test\/unit\/drain-findings\.test\.ts/,
  );
});
