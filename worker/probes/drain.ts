// `drain`: does the client lose connection reuse when it leaves a body unread?
// N sequential requests, one connection at a time, handling each body as the job's mode says,
// through the job's client (worker/probes/drain-clients.ts), whose policy for a body closed
// before its end decides the connection's fate; connections are counted at the socket layer.
import { applyRules } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import type { DrainMode, DrainSample } from '../../contracts/probes/drain.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { classifyError } from '../classify-error.js';
import { contentLength, decodeJsonValue, drainBody, readWholeBody } from '../http/body.js';
import { TimedConnector } from '../http/connector.js';
import type { AddressResolver } from '../target-policy.js';
import { proxyOf } from '../http/proxy.js';
import { runSequence, summarize } from '../http/sequence.js';
import { saysClose } from '../http/timed-client.js';
import { drainClient, type BodyHandler, type DrainCap } from './drain-clients.js';
import { DRAIN_RULES } from './drain-findings.js';
import type { Probe } from './probe.js';

function handlerFor(mode: DrainMode, cap: DrainCap): BodyHandler {
  return async (body, head) => {
    const declared = contentLength(head);
    const length = declared === undefined ? {} : { contentLength: declared };
    switch (mode) {
      case 'full': {
        const { bytes } = await readWholeBody(body);
        return { bytes, handling: { outcome: 'read-to-end', ...length } };
      }
      case 'unread':
        body.close();
        return { bytes: 0, handling: { outcome: 'closed-early', ...length } };
      case 'drain': {
        // The connection dies anyway: downloading the rest is wasted work.
        if (saysClose(head.headers.connection)) {
          body.close();
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

export const runDrainProbe: Probe<'drain'> = async (job, { signal, addresses, altSvc }) => {
  const { params, variant } = job;
  const cap = { maxBytes: params.drainMaxBytes, maxMs: params.drainMaxMs };
  const handle = handlerFor(variant.mode, cap);
  const client = drainClient(
    variant.client,
    { target: job.target, timeoutMs: params.timeoutMs, policy: addresses, altSvc },
    cap,
  );
  try {
    const run = await runSequence(params.requests, signal, async (seq): Promise<DrainSample> => {
      const { sample, handling } = await client.exchange(seq, signal, handle);
      return { ...sample, body: handling ?? { outcome: 'closed-early' } };
    });
    const connectionsOpened = client.connections.length;
    const extraConnections = countExtraConnections(run.samples);
    return {
      summary: summarize(run.samples, connectionsOpened, run.durationMs),
      details: {
        protocol: 'http/1.1',
        drainCap:
          variant.mode === 'drain' || variant.client === 'go-1.27'
            ? { bytes: params.drainMaxBytes, ms: params.drainMaxMs }
            : null,
        extraConnections,
        http2: await http2Support(job, signal, addresses),
        samples: run.samples,
      },
      findings: applyRules(
        DRAIN_RULES,
        {
          mode: variant.mode,
          client: variant.client,
          drainMaxBytes: params.drainMaxBytes,
          drainMaxMs: params.drainMaxMs,
          samples: run.samples,
          connectionsOpened,
          extraConnections,
        },
        { region: job.region, target: job.target.name, probe: job.probe },
      ),
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

/** HTTP/2 multiplexes streams: an unread body there holds no connection. Checked with ALPN on https. */
async function http2Support(
  job: JobOf<'drain'>,
  signal: AbortSignal,
  policy: AddressResolver,
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
