// The cumulative registry of a process that runs jobs records its results in batches: whoever
// reads the registry must still see every result recorded so far, and a result a mapping cannot
// record costs only its own metrics. A worker's own job counters are handed over as they are read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProbeResult, ResultOf } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { createJobMetrics } from '../../metrics/job-metrics.js';
import { createProbeMetrics } from '../../metrics/probe-metrics.js';
import { probeResult, requestSample } from '../helpers/results.js';

const reuseResult = (i: number): ProbeResult =>
  probeResult({
    jobId: `run-1.lossy.http.reuse-new-${String(i).padStart(10, '0')}`,
    target: `t${i % 3}`,
    probe: 'reuse',
    variant: { mode: 'new', scheme: 'http' },
    summary: { requests: 1, errors: 0, connectionsOpened: 1, durationMs: 2, phases: {} },
    details: { samples: [requestSample(0, { connect: 1, processing: 0.5, transfer: 0.1, total: 1.6 })] },
  });

/** The sum of a sample's values over its series (a histogram's `_count` by its sample name), as a read gives them. */
async function sumOf(registry: ReturnType<typeof createProbeMetrics>['registry'], sample: string, phase?: string) {
  const family = sample.replace(/_count$/, '');
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === family);
  assert.ok(metric, `${family} is in the registry`);
  return (metric.values as { metricName?: string; labels: Record<string, unknown>; value: number }[])
    .filter((v) => (v.metricName ?? family) === sample && (phase === undefined || v.labels.phase === phase))
    .reduce((sum, v) => sum + v.value, 0);
}

for (const count of [1, 3, 64, 150]) {
  test(`${count} results: a read sees every one`, async () => {
    const metrics = createProbeMetrics();
    for (let i = 0; i < count; i++) metrics.record(reuseResult(i));
    assert.equal(await sumOf(metrics.registry, 'probefleet_probe_jobs_total'), count);
    assert.equal(await sumOf(metrics.registry, 'probefleet_request_phase_seconds_count', 'total'), count);
    // Read again: nothing is counted twice.
    assert.equal(await sumOf(metrics.registry, 'probefleet_probe_jobs_total'), count);
  });
}

test('a result a mapping cannot record goes to onError; the others are recorded', async () => {
  const refused: string[] = [];
  const metrics = createProbeMetrics((_err, result) => refused.push(result.jobId));
  const broken = reuseResult(1);
  // What no probe reports, and prom-client refuses: a phase that is not a number.
  (broken as ResultOf<'reuse'>).details!.samples[0].phases.total = Number.NaN;
  for (const result of [reuseResult(0), broken, reuseResult(2)]) metrics.record(result);
  assert.equal(await sumOf(metrics.registry, 'probefleet_probe_jobs_total'), 3);
  assert.equal(await sumOf(metrics.registry, 'probefleet_request_phase_seconds_count', 'total'), 2);
  assert.deepEqual(refused, [broken.jobId]);
});

test("a worker's own job counters: counted as jobs start and end, read as they stand, nothing counted twice", async () => {
  const metrics = createJobMetrics({ region: 'lossy', log: createLogger('test', 'silent') });
  const readValue = async (name: string, outcome?: string) => {
    const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
    assert.ok(metric, `${name} is in the registry`);
    return metric.values.find((v) => outcome === undefined || v.labels.outcome === outcome)?.value;
  };
  assert.equal(await readValue('probefleet_worker_jobs_in_flight'), 0);
  assert.equal(await readValue('probefleet_worker_jobs_total', 'completed'), 0);
  metrics.started();
  metrics.started();
  assert.equal(await readValue('probefleet_worker_jobs_in_flight'), 2);
  metrics.completed(reuseResult(0));
  assert.equal(await readValue('probefleet_worker_jobs_in_flight'), 1);
  assert.equal(await readValue('probefleet_worker_jobs_total', 'completed'), 1);
  metrics.ended('handed_back');
  assert.equal(await readValue('probefleet_worker_jobs_in_flight'), 0);
  assert.equal(await readValue('probefleet_worker_jobs_total', 'handed_back'), 1);
  // Read again: nothing is counted twice.
  assert.equal(await readValue('probefleet_worker_jobs_total', 'completed'), 1);
  assert.equal(await readValue('probefleet_worker_jobs_total', 'failed'), 0);
  await metrics.close();
});
