// `reuse`: what does a new connection cost compared with a reused one?
// reused: one kept-alive connection; new: `Connection: close` on every request; cold: a new
// client process per request (curl by default: the shell loop users write; worker/cold-clients.ts),
// timed from spawn to exit.
import { performance } from 'node:perf_hooks';
import type { RequestSample } from '../../contracts/common.js';
import { finding, type Finding } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { classifyError } from '../classify-error.js';
import { ColdClientRefusedError, coldClientFor } from '../cold-clients.js';
import { runSequence, summarize } from '../http/sequence.js';
import { ResponseCheck } from '../http/response-checks.js';
import { TimedHttpClient } from '../http/timed-client.js';
import type { Probe, ProbeContext, ProbeOutcome } from './probe.js';

export const runReuseProbe: Probe<'reuse'> = async (job, ctx) => {
  const { params, variant } = job;
  const { signal, targetPolicy } = ctx;
  if (variant.mode === 'cold') return coldMode(job, ctx);

  const client = new TimedHttpClient({
    target: job.target,
    timeoutMs: params.timeoutMs,
    resumeTlsSessions: params.tlsResume,
    policy: targetPolicy,
    altSvc: ctx.altSvc,
  });
  try {
    const run = await runSequence(params.requests, signal, (seq) =>
      client.request({ seq, closeAfter: variant.mode === 'new', signal }),
    );
    const connectionsOpened = client.connections.length;
    return {
      summary: summarize(run.samples, connectionsOpened, run.durationMs),
      details: { samples: run.samples },
      findings: variant.mode === 'reused' ? closesEveryConnection(job, run.samples, connectionsOpened) : [],
      error: run.stoppedEarly,
    };
  } finally {
    await client.close();
  }
};

function closesEveryConnection(job: JobOf<'reuse'>, samples: RequestSample[], connectionsOpened: number): Finding[] {
  const answered = samples.filter((s) => !s.error);
  const closed = answered.filter((s) => s.serverClosed).length;
  if (answered.length < 2 || connectionsOpened < answered.length || closed < answered.length) return [];
  return [
    finding(
      'SERVER_CLOSES_EVERY_CONNECTION',
      { region: job.region, target: job.target.name, probe: job.probe },
      `asked to keep one connection alive, ${answered.length} requests opened ${connectionsOpened} connections; ` +
        `${closed} of ${answered.length} responses said Connection: close`,
      { requests: answered.length, connectionsOpened, responsesWithClose: closed },
    ),
  ];
}

async function coldMode(job: JobOf<'reuse'>, ctx: ProbeContext): Promise<ProbeOutcome<'reuse'>> {
  const { signal } = ctx;
  let client;
  try {
    client = await coldClientFor(job.params.client, {
      target: job.target,
      timeoutMs: job.params.timeoutMs,
      policy: ctx.targetPolicy,
      allowCommand: ctx.allowClientCommands,
    });
  } catch (err) {
    // A client this worker cannot or may not run, or a name curl is pinned to that did not resolve.
    const error =
      err instanceof ColdClientRefusedError
        ? { code: 'INVALID_JOB' as const, message: err.message }
        : classifyError(err);
    return { summary: summarize([], 0, 0), details: null, findings: [], error };
  }
  let connectionsOpened = 0;
  const statusCheck = new ResponseCheck(job.target.checks);
  try {
    const run = await runSequence(job.params.requests, signal, async (seq) => {
      const start = performance.now();
      const outcome = await client.request(signal);
      connectionsOpened += outcome.connectionsOpened ?? 0;
      ctx.altSvc.note(outcome.altSvc);
      // The whole process lifetime is the cost the shell loop pays per request.
      const sample = { ...outcome.sample, seq, phases: { ...outcome.sample.phases, total: performance.now() - start } };
      // A client process reports its status, not its headers or body: the status is what is checked.
      const failed = sample.error || sample.status === undefined ? undefined : statusCheck.failure(sample.status);
      return failed ? { ...sample, error: failed } : sample;
    });
    return {
      summary: summarize(run.samples, connectionsOpened, run.durationMs),
      details: { samples: run.samples, client: client.used },
      findings: [],
      error: run.stoppedEarly,
    };
  } finally {
    await client.close();
  }
}
