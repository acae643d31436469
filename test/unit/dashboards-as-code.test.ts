// Dashboards, alert rules, provisioning and the metric catalogue are generated from TypeScript
// and committed: the committed files must be what the code generates (else: npm run dashboards),
// and every query must use metrics and labels the catalogue has.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { ALERTS } from '../../dashboards/src/alerts.js';
import { buildCatalogue } from '../../dashboards/src/catalogue.js';
import { DASHBOARDS } from '../../dashboards/src/dashboards.js';
import { generatedFiles } from '../../dashboards/src/files.js';
import { REPO_ROOT } from '../helpers/repo.js';

const catalogue = buildCatalogue();
const labelsOf = new Map(catalogue.metrics.map((m) => [m.name, new Set(m.labels)]));
/** Labels Prometheus adds to every series: the scrape job, and the instance (scraped, or pushed in a group). */
const ADDED_LABELS = ['job', 'instance'];

interface PanelJson {
  title: string;
  description?: string;
  targets: { expr: string; refId: string }[];
}
interface DashboardJson {
  uid: string;
  title: string;
  panels: PanelJson[];
  templating: { list: { name: string; query?: unknown }[] };
}

async function committedDashboards(): Promise<DashboardJson[]> {
  return Promise.all(
    DASHBOARDS.map(
      async (d) =>
        JSON.parse(
          await readFile(path.join(REPO_ROOT, 'dashboards/grafana', `${d.uid}.json`), 'utf8'),
        ) as DashboardJson,
    ),
  );
}

/** The catalogue metric a name in a query refers to (a histogram's _bucket, _sum, _count included). */
function metricOf(name: string): string | undefined {
  if (labelsOf.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return catalogue.metrics.find((m) => m.name === base && m.type === 'histogram')?.name;
}

/** Problems with the metrics and labels a PromQL expression uses. */
function problemsIn(expr: string): string[] {
  const problems: string[] = [];
  const used = new Set<string>();
  for (const [, name, matchers] of expr.matchAll(/\b(probefleet_[a-z0-9_]+)(\{[^}]*\})?/g)) {
    const metric = metricOf(name);
    if (!metric) {
      problems.push(`${name} is not in the metric catalogue`);
      continue;
    }
    used.add(metric);
    for (const [, label] of (matchers ?? '').matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)) {
      if (!labelsOf.get(metric)!.has(label) && !ADDED_LABELS.includes(label))
        problems.push(`${metric} has no label ${label}`);
    }
  }
  const known = new Set([...used].flatMap((m) => [...labelsOf.get(m)!]).concat(ADDED_LABELS, 'le'));
  // The target label chosen in the dashboard: a metric that carries the plans' targetLabels is joined in.
  if ([...used].some((m) => catalogue.metrics.find((c) => c.name === m)?.planLabels)) known.add('$label');
  for (const [, list] of expr.matchAll(/\b(?:by|on|group_left)\s*\(([^)]*)\)/g)) {
    for (const label of list
      .split(',')
      .map((l) => l.trim())
      .filter(Boolean)) {
      if (!known.has(label)) problems.push(`"${label}" in by/on is a label of none of ${[...used].join(', ')}`);
    }
  }
  return problems;
}

test('the committed dashboards, alert rules, provisioning and catalogue are what dashboards/src generates (else: npm run dashboards)', async () => {
  for (const [file, content] of generatedFiles()) {
    const committed = await readFile(path.join(REPO_ROOT, file), 'utf8').catch(() => undefined);
    assert.ok(committed !== undefined, `${file} is missing: run npm run dashboards`);
    assert.ok(committed === content, `${file} is stale: run npm run dashboards and commit the result`);
  }
});

test('there are three dashboards, each with region and target variables (a target label where a panel groups by one) and a description for every panel', async () => {
  const dashboards = await committedDashboards();
  assert.deepEqual(
    dashboards.map((d) => d.title),
    ['probefleet / Regional connection cost', 'probefleet / Protocols and payloads', 'probefleet / Fleet'],
  );
  for (const d of dashboards) {
    const byLabel = d.panels.some((p) => p.targets.some((t) => t.expr.includes('$label')));
    assert.deepEqual(
      d.templating.list.map((v) => v.name),
      ['datasource', 'region', 'target', ...(byLabel ? ['label'] : []), 'window'],
      d.title,
    );
    for (const p of d.panels) {
      assert.ok(p.description, `${d.title} / ${p.title} has no description`);
      assert.ok(p.targets.length > 0, `${d.title} / ${p.title} has no query`);
    }
  }
});

test('every dashboard query uses metrics and labels of the catalogue, and filters by the region variable', async () => {
  for (const d of await committedDashboards()) {
    for (const p of d.panels) {
      for (const t of p.targets) {
        assert.deepEqual(problemsIn(t.expr), [], `${d.title} / ${p.title} (${t.refId}): ${t.expr}`);
        // Fleet-wide counts (runs finished, push failures) and Redis have no region to filter by.
        if (!/probefleet_(runs_total|push_failures_total|redis_up)/.test(t.expr))
          assert.match(t.expr, /region=~"\$region"/, `${d.title} / ${p.title}`);
      }
    }
  }
  for (const v of (await committedDashboards())[0].templating.list) {
    if (typeof v.query === 'string' && v.query.includes('probefleet_'))
      assert.deepEqual(problemsIn(v.query), [], `variable ${v.name}`);
  }
});

test('every alert is in the Prometheus rule file and in the Grafana provisioning, with catalogue metrics', async () => {
  const rules = parse(await readFile(path.join(REPO_ROOT, 'dashboards/alerts/probefleet.rules.yml'), 'utf8')) as {
    groups: { rules: { alert: string; expr: string }[] }[];
  };
  const grafana = parse(
    await readFile(path.join(REPO_ROOT, 'dashboards/provisioning/alerting/probefleet.yaml'), 'utf8'),
  ) as {
    groups: { rules: { uid: string; title: string; data: { model: { expr?: string } }[] }[] }[];
  };
  const names = ALERTS.map((a) => a.name);
  assert.equal(names.length, 6);
  assert.deepEqual(
    rules.groups[0].rules.map((r) => r.alert),
    names,
  );
  assert.deepEqual(
    grafana.groups[0].rules.map((r) => r.title),
    names,
  );
  for (const rule of rules.groups[0].rules) assert.deepEqual(problemsIn(rule.expr), [], rule.alert);
  for (const rule of grafana.groups[0].rules) {
    assert.ok(rule.uid.length <= 40, `${rule.uid}: Grafana uids are at most 40 characters`);
    assert.equal(rule.data[0].model.expr, ALERTS.find((a) => a.name === rule.title)!.query);
  }
});

test('the query checker catches unknown metrics and labels', () => {
  assert.deepEqual(problemsIn('max(probefleet_nope_total)'), ['probefleet_nope_total is not in the metric catalogue']);
  assert.deepEqual(problemsIn('probefleet_probe_jobs_total{colour="red"}'), [
    'probefleet_probe_jobs_total has no label colour',
  ]);
  assert.deepEqual(problemsIn('sum by (phase) (probefleet_probe_jobs_total)'), [
    '"phase" in by/on is a label of none of probefleet_probe_jobs_total',
  ]);
  assert.deepEqual(
    problemsIn(
      'histogram_quantile(0.5, sum by (le, phase) (rate(probefleet_request_phase_seconds_bucket{phase="total"}[5m])))',
    ),
    [],
  );
  // The chosen target label only with the series that carries it joined in.
  assert.deepEqual(problemsIn('sum by ($label) (probefleet_probe_jobs_total)'), [
    '"$label" in by/on is a label of none of probefleet_probe_jobs_total',
  ]);
  assert.deepEqual(
    problemsIn(
      'sum by ($label) (probefleet_probe_success * on(plan, region, target) group_left($label) probefleet_target_info)',
    ),
    [],
  );
});
