// The cumulative registry of a process that runs jobs (a region worker, or `run` in embedded
// mode): every result adds to its counters and histograms, so targets probed one after another
// all stay in it. It is pushed whole as the `probes` group (see pusher.ts).
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { PROBE_JOB_METRICS, type ProbeJobMetric } from '../contracts/metric-names.js';
import type { ProbeResult, ResultOf } from '../contracts/result.js';
import type { ProbeKind } from '../contracts/probes/index.js';
import { PROBE_METRIC_MAPPINGS, type JobRecorder, type Labels } from './probe-mappings.js';
import { metricsOf } from './prom.js';

export interface ProbeMetrics {
  registry: Registry;
  /** Adds a finished job's result. */
  record(result: ProbeResult): void;
}

export function createProbeMetrics(): ProbeMetrics {
  const registry = new Registry();
  const metrics = metricsOf(PROBE_JOB_METRICS, registry);
  const wrongType = (metric: ProbeJobMetric, use: string) =>
    new TypeError(`${PROBE_JOB_METRICS[metric].name} is a ${PROBE_JOB_METRICS[metric].type}, not for ${use}`);
  const recorder: JobRecorder = {
    add(metric, labels, value = 1) {
      const m = metrics[metric];
      if (!(m instanceof Counter)) throw wrongType(metric, 'add');
      m.inc(labels, value);
    },
    set(metric, labels, value) {
      const m = metrics[metric];
      if (!(m instanceof Gauge)) throw wrongType(metric, 'set');
      m.set(labels, value);
    },
    observe(metric, labels, seconds) {
      const m = metrics[metric];
      if (!(m instanceof Histogram)) throw wrongType(metric, 'observe');
      m.observe(labels, seconds);
    },
  };

  return {
    registry,
    record(result) {
      const labels: Labels = { target: result.target, probe: result.probe };
      const finishedAt = Date.parse(result.finishedAt) / 1000;
      const outcome = result.ok ? 'ok' : (result.error?.code ?? 'error');
      recorder.add('jobs', { target: result.target, probe: result.probe, outcome });
      recorder.set('lastRun', labels, finishedAt);
      if (result.ok) recorder.set('lastSuccess', labels, finishedAt);
      recordProbe(result, recorder);
    },
  };
}

function recordProbe<K extends ProbeKind>(result: ResultOf<K>, recorder: JobRecorder): void {
  PROBE_METRIC_MAPPINGS[result.probe as K].job(result, recorder);
}
