// The metric catalogue against what the code really emits: every probe runs against the lab,
// its results go through the same mapping a worker and a run finisher use, and the metrics and
// labels each probe produces must be exactly the catalogue's (a missing, extra or relabelled
// metric fails). Values are checked against the results they came from.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Registry } from 'prom-client';
import {
  LABEL_VALUES,
  PUSH_GROUPS,
  PUSH_METRICS,
  REDIS_ERROR_KINDS,
  REDIS_METRICS,
  TARGET_INFO_METRIC,
  WORKER_METRICS,
} from '../../contracts/metric-names.js';
import { PROBE_KINDS } from '../../contracts/probes/index.js';
import type { ProbeResult, RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { runEmbedded } from '../../coordinator/embedded-runner.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { splitPlan } from '../../coordinator/split.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { buildCatalogue } from '../../dashboards/src/catalogue.js';
import { SLOW_HANDSHAKE_DELAY_MS } from '../../lab/servers/slow-handshake.js';
import { startLab, type Lab } from '../../lab/index.js';
import { createJobMetrics } from '../../metrics/job-metrics.js';
import { createProbeMetrics } from '../../metrics/probe-metrics.js';
import { countRedisErrors } from '../../metrics/redis-metrics.js';
import { runMetricsOf } from '../../metrics/run-metrics.js';
import { everyProbePlan } from '../helpers/metrics-plan.js';

const log = createLogger('test', 'silent');
const quiet = { start() {}, step() {}, done() {} };

/** `family`: the metric; `name`: the sample's (a histogram's _bucket, _sum, _count). */
type Sample = { family: string; name: string; labels: Record<string, string | number>; value: number };

async function samplesOf(registry: Registry): Promise<Sample[]> {
  const json = (await registry.getMetricsAsJSON()) as unknown as {
    name: string;
    values: { metricName?: string; labels: Record<string, string | number>; value: number }[];
  }[];
  return json.flatMap((m) =>
    m.values.map((v) => ({ family: m.name, name: v.metricName ?? m.name, labels: v.labels, value: v.value })),
  );
}

/** Metric family → its label names as Prometheus will store them (group labels added, `le` left out). */
async function labelsByFamily(registry: Registry, groupLabels: readonly string[]): Promise<Map<string, Set<string>>> {
  const found = new Map<string, Set<string>>();
  for (const s of await samplesOf(registry)) {
    const labels = [...Object.keys(s.labels).filter((l) => l !== 'le'), ...groupLabels].sort().join(',');
    found.set(s.family, (found.get(s.family) ?? new Set()).add(labels));
  }
  return found;
}

const sum = (samples: Sample[], name: string, match: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);

describe('metric catalogue vs a real run of every probe', () => {
  let lab: Lab;
  let results: ProbeResult[];
  let report: RunReport;
  const catalogue = buildCatalogue();

  before(async () => {
    lab = await startLab({ log });
    const loaded = await parsePlan(await everyProbePlan(lab, 'catalogue'), 'catalogue.yaml');
    const startedAt = new Date();
    results = await runEmbedded(splitPlan(loaded, 'catalogue-run'), { log, progress: quiet });
    report = buildRunReport({
      runId: 'catalogue-run',
      mode: 'embedded',
      plan: loaded.plan,
      startedAt,
      finishedAt: new Date(),
      results,
    });
  });

  after(async () => {
    await lab?.close();
  });

  test('the plan ran every probe, each with at least one clean result', () => {
    for (const probe of PROBE_KINDS)
      assert.ok(
        results.some((r) => r.probe === probe && r.ok),
        `${probe}: ${results
          .filter((r) => r.probe === probe)
          .map((r) => r.error?.message)
          .join('; ')}`,
      );
  });

  for (const probe of PROBE_KINDS) {
    test(`${probe}: the metrics and labels its results produce are exactly the catalogue's`, async () => {
      const ofProbe = results.filter((r) => r.probe === probe);
      const jobMetrics = createProbeMetrics();
      for (const r of ofProbe) jobMetrics.record(r);
      const emitted = await labelsByFamily(jobMetrics.registry, PUSH_GROUPS.probes.key);
      const subReport = buildRunReport({
        runId: report.runId,
        mode: 'embedded',
        plan: report.plan,
        startedAt: new Date(report.startedAt),
        finishedAt: new Date(report.finishedAt),
        results: ofProbe,
      });
      for (const { registry } of runMetricsOf(subReport)) {
        for (const [name, sets] of await labelsByFamily(registry, PUSH_GROUPS.run.key)) emitted.set(name, sets);
      }
      // The plan's targets and their labels come with every run of a plan with labels, whatever its probes (below).
      emitted.delete(TARGET_INFO_METRIC.name);
      const actual = Object.fromEntries([...emitted].map(([name, sets]) => [name, [...sets].map((s) => s.split(','))]));
      const expected = Object.fromEntries(
        Object.entries(catalogue.probes[probe]).map(([name, labels]) => [name, [labels]]),
      );
      assert.deepEqual(actual, expected);
    });
  }

  test('closed label values stay within the catalogue', async () => {
    const jobMetrics = createProbeMetrics();
    for (const r of results) jobMetrics.record(r);
    const samples = [
      ...(await samplesOf(jobMetrics.registry)),
      ...(await Promise.all(runMetricsOf(report).map((g) => samplesOf(g.registry)))).flat(),
    ];
    const outcomes = new Set(['ok', 'error', 'failed', 'not_run']);
    for (const s of samples) {
      for (const [label, value] of Object.entries(s.labels)) {
        const allowed = LABEL_VALUES[label];
        if (label === 'le' || (typeof allowed === 'string' && label !== 'outcome')) continue;
        // The plan's own target labels: its values are its own (bounded by the plan's limits).
        if (report.plan.targetLabels?.includes(label)) continue;
        if (label === 'outcome')
          assert.ok(outcomes.has(String(value)) || /^[A-Z_]+$/.test(String(value)), `${s.name} outcome="${value}"`);
        else
          assert.ok(
            allowed?.includes(String(value)),
            `${s.name} ${label}="${value}" is not in the catalogue's values for ${label}`,
          );
      }
    }
  });

  test("probefleet_target_info: one series per target of the plan, with the catalogue's labels and the plan's targetLabels", async () => {
    const [group] = runMetricsOf(report);
    const info = (await samplesOf(group.registry)).filter((s) => s.name === TARGET_INFO_METRIC.name);
    const entry = catalogue.metrics.find((m) => m.name === TARGET_INFO_METRIC.name)!;
    assert.ok(entry.planLabels, 'the catalogue says it carries the plan labels');
    assert.deepEqual(
      info.map((s) => [s.labels.target, s.labels.team, s.value]).sort(),
      report.plan.targets.map((t) => [t.name, t.labels?.team, 1]).sort(),
    );
    for (const s of info)
      assert.deepEqual(
        [...Object.keys(s.labels), ...PUSH_GROUPS.run.key].sort(),
        [...entry.labels, ...(report.plan.targetLabels ?? [])].sort(),
      );
  });

  test('values agree with the results they came from', async () => {
    const jobMetrics = createProbeMetrics();
    for (const r of results) jobMetrics.record(r);
    const samples = await samplesOf(jobMetrics.registry);
    assert.equal(sum(samples, 'probefleet_probe_jobs_total'), results.length);
    const reuse = results.filter((r) => r.probe === 'reuse');
    assert.equal(
      sum(samples, 'probefleet_requests_total', { probe: 'reuse' }),
      reuse.reduce((n, r) => n + r.summary.requests, 0),
    );
    assert.equal(
      sum(samples, 'probefleet_connections_opened_total', { probe: 'reuse', mode: 'new' }),
      15,
      '5 new connections for each of 3 targets',
    );
    const answered = reuse.flatMap((r) => (r.details?.samples ?? []).filter((s) => !s.error));
    assert.equal(
      sum(samples, 'probefleet_request_phase_seconds_count', { probe: 'reuse', phase: 'total' }),
      answered.length,
    );
    assert.equal(
      sum(samples, 'probefleet_tls_handshake_seconds_count', { handshake: 'full' }),
      6,
      '3 full handshakes on https and on slow-tls',
    );

    const [group] = runMetricsOf(report);
    assert.deepEqual([group.plan, group.region], ['catalogue', 'local']);
    const run = await samplesOf(group.registry);
    const p95 = (target: string) =>
      run.find(
        (s) =>
          s.name === 'probefleet_last_run_tls_handshake_seconds' &&
          s.labels.target === target &&
          s.labels.handshake === 'full' &&
          s.labels.quantile === '0.95',
      )!.value;
    assert.ok(p95('slow-tls') >= SLOW_HANDSHAKE_DELAY_MS / 1000, `slow-tls handshake p95 ${p95('slow-tls')} s`);
    assert.ok(p95('https') < 0.5, `https handshake p95 ${p95('https')} s`);
    const cost = report.comparisons.find((c) => c.target === 'https')!;
    assert.equal(
      run.find((s) => s.name === 'probefleet_new_connection_cost_seconds' && s.labels.target === 'https')?.value,
      cost.newConnectionCostMs.median / 1000,
    );
    assert.equal(sum(run, 'probefleet_last_run_jobs'), results.length);
    assert.equal(sum(run, 'probefleet_findings'), report.findings.length);
  });

  test("the worker's own /metrics registry has the catalogue's metrics and process metrics", async () => {
    const metrics = createJobMetrics({ region: 'eu-west', pushgateway: { url: 'http://127.0.0.1:9' }, log });
    // What `probefleet worker` adds to it (the coordinator's registry has the same).
    const countRedisError = countRedisErrors(metrics.registry);
    countRedisError(new Error("OOM command not allowed when used memory > 'maxmemory'."));
    const names = new Set((await metrics.registry.getMetricsAsJSON()).map((m) => m.name));
    for (const spec of [
      ...Object.values(WORKER_METRICS),
      ...Object.values(PUSH_METRICS),
      ...Object.values(REDIS_METRICS),
    ])
      assert.ok(names.has(spec.name), spec.name);
    const redisErrors = (await samplesOf(metrics.registry)).filter((s) => s.name === REDIS_METRICS.errors.name);
    assert.deepEqual(
      redisErrors.map((s) => [s.labels.kind, s.value]),
      REDIS_ERROR_KINDS.map((kind) => [kind, kind === 'oom' ? 1 : 0]),
      'every kind from the start, an OOM reply counted as oom',
    );
    assert.ok(names.has('process_cpu_seconds_total') && names.has('nodejs_eventloop_lag_seconds'));
    for (const m of catalogue.metrics.filter(
      (m) => m.source === 'scrape:worker' || m.source === 'scrape:worker,coordinator',
    )) {
      for (const s of await samplesOf(metrics.registry))
        if (s.name === m.name) assert.deepEqual(Object.keys(s.labels).sort(), m.labels);
    }
  });
});
