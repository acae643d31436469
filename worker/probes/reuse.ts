// `reuse`: what does a new connection cost compared with a reused one?
// reused: one kept-alive connection; new: `Connection: close` on every request; cold: a new
// client process per request (a shell loop of curl), timed from spawn to exit.
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { RequestSample } from '../../contracts/common.js';
import { finding, type Finding } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { classifyError } from '../classify-error.js';
import { runSequence, summarize } from '../http/sequence.js';
import { TimedHttpClient } from '../http/timed-client.js';
import { WireError } from '../http/wire.js';
import type { ColdRequestInput, ColdRequestOutput } from './cold-request.js';
import type { TargetPolicy } from '../target-policy.js';
import type { Probe } from './probe.js';

const COLD_REQUEST_SCRIPT = fileURLToPath(new URL('./cold-request.js', import.meta.url));

export const reuseProbe: Probe<'reuse'> = async (job, { signal, targetPolicy }) => {
  const { params, variant } = job;
  if (variant.mode === 'cold') return coldMode(job, signal, targetPolicy);

  const client = new TimedHttpClient({
    target: job.target,
    timeoutMs: params.timeoutMs,
    resumeTlsSessions: params.tlsResume,
    policy: targetPolicy,
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

async function coldMode(job: JobOf<'reuse'>, signal: AbortSignal, policy: TargetPolicy) {
  let connectionsOpened = 0;
  const input: ColdRequestInput = { target: job.target, timeoutMs: job.params.timeoutMs, policy: policy.settings };
  const run = await runSequence(job.params.requests, signal, async (seq) => {
    const start = performance.now();
    try {
      const output = await spawnColdRequest(input, signal);
      connectionsOpened += output.connectionsOpened;
      // The whole process lifetime is the cost the shell loop pays per request.
      return { ...output.sample, seq, phases: { ...output.sample.phases, total: performance.now() - start } };
    } catch (err) {
      return {
        seq,
        newConnection: false,
        phases: { total: performance.now() - start },
        bodyBytes: 0,
        error: classifyError(err),
      };
    }
  });
  return {
    summary: summarize(run.samples, connectionsOpened, run.durationMs),
    details: { samples: run.samples },
    findings: [],
    error: run.stoppedEarly,
  };
}

function spawnColdRequest(input: ColdRequestInput, signal: AbortSignal): Promise<ColdRequestOutput> {
  // The child bounds its request by timeoutMs; twice that also leaves room for Node to start.
  const killAfterMs = input.timeoutMs * 2;
  return new Promise((resolve, reject) => {
    let killed = false;
    const child = execFile(
      process.execPath,
      [COLD_REQUEST_SCRIPT, '-'],
      { signal, maxBuffer: 1 << 20 },
      (err, stdout) => {
        clearTimeout(timer);
        if (killed)
          reject(new WireError(`the request's process gave no answer within ${killAfterMs} ms`, 'EWIRE_TIMEOUT'));
        else if (err) reject(err);
        else resolve(JSON.parse(stdout) as ColdRequestOutput);
      },
    );
    const timer = setTimeout(() => {
      killed = true;
      child.kill();
    }, killAfterMs);
    child.stdin?.end(JSON.stringify(input));
  });
}
