// `load`: how does the target hold up under concurrency? Runs the load generator and turns
// its counters and histograms into a result; percentiles are read from the histograms, which
// travel with the result (encoded) so the coordinator can merge regions exactly.
import type { ProbeError } from '../../contracts/common.js';
import { applyRules } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { JOB_LIMITS } from '../../contracts/limits.js';
import type { LoadDetails } from '../../contracts/probes/load.js';
import { encodeHistogram, percentilesOf } from '../../common/latency-histogram.js';
import { availableParallelism } from 'node:os';
import type { LoadOutcome } from '../http/load-generator.js';
import { generateLoadOnThreads } from '../http/load-threads.js';
import { proxyOf } from '../http/proxy.js';
import { ResponseCheck } from '../http/response-checks.js';
import { LOAD_RULES } from './load-findings.js';
import type { Probe } from './probe.js';

export const runLoadProbe: Probe<'load'> = async (job, { signal, addresses, altSvc }) => {
  const { params, variant } = job;
  const cores = availableParallelism();
  const run = await generateLoadOnThreads(
    {
      url: job.target.url,
      headers: job.target.headers,
      method: job.target.method,
      body: job.target.body,
      tls: job.target.tls,
      proxy: proxyOf(job.target),
      mode: variant.mode,
      connections: params.connections,
      streams: params.streams,
      durationMs: params.durationSeconds * 1000,
      // A closed loop without a count runs as fast as the target answers: the per-job cap still holds.
      maxRequests: params.requests ?? JOB_LIMITS.requests,
      rate: params.rate,
      timeoutMs: params.timeoutMs,
      tlsResume: params.tlsResume,
      signal,
      policy: addresses,
      altSvc,
    },
    params.threads === undefined || params.threads === 'auto' ? cores : params.threads,
  );
  const latencyMs = percentilesOf(run.latency);
  const details: LoadDetails = {
    loop: variant.loop,
    mode: variant.mode,
    connections: params.connections,
    concurrency: run.concurrency,
    ...(params.rate !== undefined
      ? { rate: params.rate, scheduled: run.scheduled, unsent: (run.scheduled ?? 0) - run.sent }
      : {}),
    completed: run.completed,
    errors: run.errors,
    statuses: statusCounts(run.statusClasses),
    connectionsOpened: run.connectionsOpened,
    protocols: run.protocols,
    requestsPerSecond: run.durationMs > 0 ? (run.completed * 1000) / run.durationMs : 0,
    bodyBytes: run.bodyBytes,
    stoppedBy: run.stoppedBy,
    latencyMs,
    latencyHistogram: encodeHistogram(run.latency),
    ...(run.serviceTime
      ? { serviceTimeMs: percentilesOf(run.serviceTime), serviceTimeHistogram: encodeHistogram(run.serviceTime) }
      : {}),
    client: {
      threads: run.threads,
      cores,
      eventLoopUtilization: run.eventLoopUtilizations.map((u) => Math.min(1, Math.max(0, u))),
      cpuSeconds: run.cpuSeconds,
    },
  };
  return {
    summary: {
      requests: run.completed + run.failed,
      errors: run.failed,
      connectionsOpened: run.connectionsOpened,
      durationMs: run.durationMs,
      phases:
        run.completed > 0
          ? {
              total: {
                p50: latencyMs.p50,
                p95: run.latency.getValueAtPercentile(95) / 1000,
                p99: latencyMs.p99,
                n: run.completed,
              },
            }
          : {},
    },
    details,
    findings: applyRules(
      LOAD_RULES,
      {
        mode: variant.mode,
        connections: params.connections,
        completed: run.completed,
        connectionsOpened: run.connectionsOpened,
        eventLoopUtilization: details.client.eventLoopUtilization,
        cores,
      },
      { region: job.region, target: job.target.name, probe: job.probe },
    ),
    error: stopError(run) ?? statusCheckError(job, run),
  };
};

/** Under load statuses are counted by class: a response of a class the target's checks do not
 * allow (plan validation keeps a load target's checks to classes) fails the job. */
function statusCheckError(job: JobOf<'load'>, run: LoadOutcome): ProbeError | null {
  const check = new ResponseCheck(job.target.checks);
  const outside = run.statusClasses.flatMap((count, i) =>
    count > 0 && !check.statusPasses(i * 100) ? [[i, count]] : [],
  );
  if (outside.length === 0) return null;
  const failed = outside.reduce((n, [, count]) => n + count, 0);
  return {
    code: 'RESPONSE_CHECK_FAILED',
    message: `response check failed: ${failed} of ${run.completed} responses had a status of ${outside.map(([i, count]) => `${i}xx (${count})`).join(', ')}, not ${(job.target.checks?.status ?? ['2xx']).join(', ')}`,
  };
}

function statusCounts(classes: readonly number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  classes.forEach((count, i) => {
    if (count > 0) counts[`${i}xx`] = count;
  });
  return counts;
}

/** A run that ended on its duration or request bound, with answers, measured what it was asked to. */
function stopError(run: LoadOutcome): ProbeError | null {
  if (run.stoppedBy === 'deadline') {
    return {
      code: 'DEADLINE_EXCEEDED',
      message: `the job's time bound was reached after ${run.completed} answered requests`,
    };
  }
  if (run.lastError && (run.stoppedBy === 'failures' || run.completed === 0)) {
    return {
      code: run.lastError.code,
      message: `stopped after ${run.failed} failed requests (${run.completed} answered): ${run.lastError.message}`,
    };
  }
  return null;
}
