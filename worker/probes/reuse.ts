// `reuse`: what does a new connection cost compared with a reused one?
// reused: one kept-alive connection; new: `Connection: close` on every request; cold: a new
// client process per request (curl by default: the shell loop users write; worker/cold-clients.ts),
// timed from spawn to exit.
import { performance } from 'node:perf_hooks';
import { applyRules } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { classifyError } from '../classify-error.js';
import { ColdClientRefusedError, coldClientFor } from '../cold-clients.js';
import { runSequence, summarize } from '../http/sequence.js';
import { ResponseCheck } from '../http/response-checks.js';
import { TimedHttpClient } from '../http/timed-client.js';
import type { Probe, ProbeContext, ProbeOutcome } from './probe.js';
import { REUSE_RULES } from './reuse-findings.js';

export const runReuseProbe: Probe<'reuse'> = async (job, ctx) => {
  const { params, variant } = job;
  const { signal, addresses } = ctx;
  if (variant.mode === 'cold') return coldMode(job, ctx);

  const client = new TimedHttpClient({
    target: job.target,
    timeoutMs: params.timeoutMs,
    resumeTlsSessions: params.tlsResume,
    policy: addresses,
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
      findings: applyRules(
        REUSE_RULES,
        { mode: variant.mode, samples: run.samples, connectionsOpened },
        { region: job.region, target: job.target.name, probe: job.probe },
      ),
      error: run.stoppedEarly,
    };
  } finally {
    await client.close();
  }
};

async function coldMode(job: JobOf<'reuse'>, ctx: ProbeContext): Promise<ProbeOutcome<'reuse'>> {
  const { signal } = ctx;
  let client;
  try {
    client = await coldClientFor(job.params.client, {
      target: job.target,
      timeoutMs: job.params.timeoutMs,
      addresses: ctx.addresses,
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
