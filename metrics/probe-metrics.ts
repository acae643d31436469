// The cumulative registry of a process that runs jobs (a region worker, or `run` in embedded
// mode): every result adds to its counters and histograms, so targets probed one after another
// all stay in it. It is pushed whole as the `probes` group (see pusher.ts).
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { PROBE_JOB_METRICS, type ProbeJobMetric } from '../contracts/metric-names.js';
import type { ProbeResult, ResultOf } from '../contracts/result.js';
import type { ProbeKind } from '../contracts/probes/index.js';
import { mappingOf, type JobRecorder, type Labels } from './probe-mappings.js';
import { metricsOf } from './prom.js';

export interface ProbeMetrics {
  /** Holds every result recorded so far whenever it is read. */
  registry: Registry;
  /** Adds a finished job's result. */
  record(result: ProbeResult): void;
}

/**
 * Results recorded at once, in one pass, when this many wait. One at a time, as each job ended,
 * with prom-client's code gone cold behind the job's own, recording cost a worker ~50 µs more
 * per one-request job than in a batch (bench/README.md, "Per job").
 */
const RECORD_BATCH = 64;

/** `onError`: a result a mapping could not record (a bug), which costs that result's metrics only. */
export function createProbeMetrics(onError?: (err: unknown, result: ProbeResult) => void): ProbeMetrics {
  const registry = new Registry();
  const waiting: ProbeResult[] = [];
  const recordWaiting = () => {
    for (const result of waiting.splice(0)) {
      try {
        recordOne(result);
      } catch (err) {
        if (!onError) throw err;
        onError(err, result);
      }
    }
  };
  // prom-client calls `collect` before it reads a metric: whoever reads the registry (a push,
  // /metrics, a test) sees every result recorded so far.
  const metrics = metricsOf(PROBE_JOB_METRICS, registry, recordWaiting);
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

  const recordOne = (result: ProbeResult) => {
    const labels: Labels = { target: result.target, probe: result.probe };
    const finishedAt = Date.parse(result.finishedAt) / 1000;
    const outcome = result.ok ? 'ok' : (result.error?.code ?? 'error');
    recorder.add('jobs', { target: result.target, probe: result.probe, outcome });
    recorder.set('lastRun', labels, finishedAt);
    if (result.ok) recorder.set('lastSuccess', labels, finishedAt);
    recordProbe(result, recorder);
  };

  return {
    registry,
    record(result) {
      waiting.push(result);
      if (waiting.length >= RECORD_BATCH) recordWaiting();
    },
  };
}

function recordProbe<K extends ProbeKind>(result: ResultOf<K>, recorder: JobRecorder): void {
  mappingOf(result.probe as K).job(result, recorder);
}
