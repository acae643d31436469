// `drain`: does the client lose connection reuse when it leaves a body unread?
// N sequential requests over one undici Client (one connection at a time), handling each body
// as the job's mode says; connections are counted at the socket layer. undici completes a
// response whose body it has buffered whole (about 64 KiB) even if nobody reads it, so only a
// body it has not finished receiving costs the connection when it is closed.
import { finding, type Finding } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import type { DrainMode, DrainSample } from '../../contracts/probes/drain.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { classifyError } from '../classify-error.js';
import {
  closeBody,
  contentLength,
  decodeJsonValue,
  drainBody,
  readWholeBody,
  type BodyConsumer,
  type BodyRead,
} from '../http/body.js';
import { TimedConnector } from '../http/connector.js';
import type { TargetPolicy } from '../target-policy.js';
import { proxyOf } from '../http/proxy.js';
import { runSequence, summarize } from '../http/sequence.js';
import { TimedHttpClient } from '../http/timed-client.js';
import type { Probe } from './probe.js';

type Handling = DrainSample['body'];

/** UNREAD_BODY_BREAKS_REUSE needs at least this share of requests to have paid a new connection (one stray drain timeout on a busy machine is not a diagnosis). */
const FINDING_SHARE = 0.1;

function consumerFor(
  mode: DrainMode,
  cap: { maxBytes: number; maxMs: number },
): BodyConsumer<BodyRead & { handling: Handling }> {
  return async (body, head) => {
    const declared = contentLength(head);
    const length = declared === undefined ? {} : { contentLength: declared };
    switch (mode) {
      case 'full': {
        const { bytes } = await readWholeBody(body);
        return { bytes, handling: { outcome: 'read-to-end', ...length } };
      }
      case 'unread':
        closeBody(body);
        return { bytes: 0, handling: { outcome: 'closed-early', ...length } };
      case 'drain': {
        // The connection dies anyway: downloading the rest is wasted work.
        if (head.headers.connection === 'close') {
          closeBody(body);
          return { bytes: 0, handling: { outcome: 'skipped-connection-close', ...length } };
        }
        const drained = await drainBody(body, head, cap);
        return {
          bytes: drained.bytes,
          handling: {
            outcome: drained.complete ? 'read-to-end' : 'closed-early',
            ...(drained.capHit ? { capHit: drained.capHit } : {}),
            ...length,
            drainMs: drained.drainMs,
          },
        };
      }
      case 'json': {
        const { bytes } = await decodeJsonValue(body);
        return { bytes, handling: { outcome: declared === bytes ? 'read-to-end' : 'closed-early', ...length } };
      }
    }
  };
}

export const runDrainProbe: Probe<'drain'> = async (job, { signal, targetPolicy, altSvc }) => {
  const { params, variant } = job;
  const consume = consumerFor(variant.mode, { maxBytes: params.drainMaxBytes, maxMs: params.drainMaxMs });
  const client = new TimedHttpClient({ target: job.target, timeoutMs: params.timeoutMs, policy: targetPolicy, altSvc });
  try {
    const run = await runSequence(params.requests, signal, async (seq): Promise<DrainSample> => {
      const { sample, body } = await client.exchange({ seq, signal, consumeBody: consume });
      return { ...sample, body: body?.handling ?? { outcome: 'closed-early' } };
    });
    const connectionsOpened = client.connections.length;
    const extraConnections = countExtraConnections(run.samples);
    return {
      summary: summarize(run.samples, connectionsOpened, run.durationMs),
      details: {
        protocol: 'http/1.1',
        drainCap: variant.mode === 'drain' ? { bytes: params.drainMaxBytes, ms: params.drainMaxMs } : null,
        extraConnections,
        http2: await http2Support(job, signal, targetPolicy),
        samples: run.samples,
      },
      findings:
        extraConnections > 0 && extraConnections >= FINDING_SHARE * run.samples.length
          ? [unreadBodyFinding(job, run.samples, connectionsOpened, extraConnections)]
          : [],
      error: run.stoppedEarly,
    };
  } finally {
    await client.close();
  }
};

/** New connections that followed a body closed before its end (a server's Connection: close is not the client's doing). */
function countExtraConnections(samples: readonly DrainSample[]): number {
  let extra = 0;
  for (let i = 1; i < samples.length; i++) {
    const previous = samples[i - 1];
    if (
      samples[i].newConnection &&
      !previous.error &&
      !previous.serverClosed &&
      previous.body.outcome === 'closed-early'
    )
      extra++;
  }
  return extra;
}

const MODE_WORDS: Record<DrainMode, string> = {
  full: 'read to the end',
  unread: 'closed unread',
  drain: 'drained within the cap',
  json: 'closed once the JSON decoder reached the closing bracket',
};

function unreadBodyFinding(
  job: JobOf<'drain'>,
  samples: readonly DrainSample[],
  connectionsOpened: number,
  extra: number,
): Finding {
  const { mode } = job.variant;
  const answered = samples.filter((s) => !s.error);
  const lengths = [
    ...new Set(answered.flatMap((s) => (s.body.contentLength === undefined ? [] : [s.body.contentLength]))),
  ];
  const size = lengths.length === 1 ? ` of ${lengths[0].toLocaleString('en-US')} B` : '';
  const caps = mode === 'drain' ? capWords(job, answered) : '';
  return finding(
    'UNREAD_BODY_BREAKS_REUSE',
    { region: job.region, target: job.target.name, probe: job.probe },
    `${answered.length} requests, bodies${size} ${MODE_WORDS[mode]}: ${connectionsOpened} connections opened, ${extra} of them after a body closed before its end${caps}`,
    {
      mode,
      requests: answered.length,
      connectionsOpened,
      extraConnections: extra,
      ...(lengths.length === 1 ? { contentLength: lengths[0] } : {}),
    },
  );
}

function capWords(job: JobOf<'drain'>, samples: readonly DrainSample[]): string {
  const over = (hit: 'bytes' | 'time') => samples.filter((s) => s.body.capHit === hit).length;
  return ` (cap ${job.params.drainMaxBytes.toLocaleString('en-US')} B / ${job.params.drainMaxMs} ms: ${over('bytes')} over the byte cap, ${over('time')} still arriving at the time cap)`;
}

/** HTTP/2 multiplexes streams: an unread body there holds no connection. Checked with ALPN on https. */
async function http2Support(
  job: JobOf<'drain'>,
  signal: AbortSignal,
  policy: TargetPolicy,
): Promise<ProbeDetails<'drain'>['http2']> {
  const url = new URL(job.target.url);
  if (url.protocol !== 'https:') {
    return {
      checked: false,
      negotiated: null,
      note: 'plain http: clients speak HTTP/1.1 here (h2c is rare), where a body closed early costs the connection; over HTTP/2 it would cost nothing and need no drain',
    };
  }
  if (signal.aborted) return { checked: false, negotiated: null, note: 'not checked: the time bound was reached' };
  const connector = new TimedConnector({
    tls: job.target.tls,
    proxy: proxyOf(job.target),
    resumeTlsSessions: false,
    alpn: ['h2', 'http/1.1'],
    timeoutMs: job.params.timeoutMs,
    policy,
  });
  try {
    const socket = await connector.open(url.hostname, Number(url.port) || 443, true);
    socket.destroy();
    const alpn = connector.connections[0].tls?.alpn;
    return alpn === 'h2'
      ? {
          checked: true,
          negotiated: true,
          note: 'the target also speaks HTTP/2 (ALPN h2): an HTTP/2 client needs no drain, since an unread body holds one stream, not the connection; these numbers are for HTTP/1.1 clients',
        }
      : {
          checked: true,
          negotiated: false,
          note: `the target offers only ${alpn || 'no ALPN protocol'}: every client pays for closed-early bodies`,
        };
  } catch (err) {
    const error = classifyError(err);
    return { checked: true, negotiated: null, note: `could not check for HTTP/2: ${error.code} ${error.message}` };
  }
}
