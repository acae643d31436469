// `tls`: what does the handshake cost, and can it be avoided?
// One job per TLS version. N full handshakes on fresh TCP connections; with resumption on,
// each is followed by one offering the session the full handshake left, so full and resumed
// alternate and any drift in the machine's load hits both alike. The connector times TCP
// connect and the handshake apart; the certificate is read on a full handshake, because a
// resumed one does not show it.
import { performance } from 'node:perf_hooks';
import type tls from 'node:tls';
import type { PhaseTimes, ProbeError } from '../../contracts/common.js';
import { finding, type Finding } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { TLS_PROTOCOL_NAME, type CertificateInfo, type HandshakeSample } from '../../contracts/probes/tls.js';
import { median, percentiles } from '../../common/stats.js';
import { classifyError } from '../classify-error.js';
import { connectionPhases, TimedConnector, tlsAlertOf, type ConnectionTimeline } from '../http/connector.js';
import { proxyOf } from '../http/proxy.js';
import { runSequence, summarize } from '../http/sequence.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import type { TargetPolicy } from '../target-policy.js';
import type { Probe } from './probe.js';
import { dateMs, isoDate } from '../../common/target-values.js';

const DAY_MS = 86_400_000;
/** A session ticket comes about one round trip after the handshake; TCP connect took one. This is the least we wait. */
const SESSION_WAIT_FLOOR_MS = 200;

export const runTlsProbe: Probe<'tls'> = async (job, { signal, targetPolicy }) => {
  const { params, variant } = job;
  const url = new URL(job.target.url);
  const port = Number(url.port) || 443;
  const connector = new TimedConnector({
    tls: job.target.tls,
    proxy: proxyOf(job.target),
    resumeTlsSessions: params.resumption,
    alpn: params.alpn,
    timeoutMs: params.timeoutMs,
    tlsVersion: TLS_PROTOCOL_NAME[variant.version],
    policy: targetPolicy,
  });
  // Written by the handshakes as they go.
  const seen = { certificate: null as CertificateInfo | null, longestSessionWaitMs: 0 };

  /** A server that refused the client after a handshake (TLS 1.3's certificate_required) refuses every one: not asked again. */
  let refusal: ProbeError | undefined;
  const handshake = async (seq: number): Promise<HandshakeSample> => {
    const kind = params.resumption && seq % 2 === 1 ? 'resumed' : 'full';
    if (refusal) return refusedSample(seq, kind, false, refusal);
    if (kind === 'full') connector.forgetTlsSession();
    const sessionOffered = connector.hasTlsSession;
    const start = performance.now();
    let socket: tls.TLSSocket;
    try {
      socket = (await connector.open(url.hostname, port, true)) as tls.TLSSocket;
    } catch (err) {
      return refusedSample(seq, kind, sessionOffered, classifyError(err), performance.now() - start);
    }
    // Nothing is sent on this socket; a late reset must not become an uncaught error, and a late
    // TLS alert is the server's answer (below).
    const refusedLate = lateRefusal(socket);
    const timeline = connector.connections.at(-1)!;
    const waitMs = sessionWaitMs(params.timeoutMs, timeline);
    try {
      if (kind === 'full') {
        seen.certificate ??= readCertificate(socket);
        if (params.resumption) {
          seen.longestSessionWaitMs = Math.max(seen.longestSessionWaitMs, waitMs);
          await sessionArrival(socket, timeline, waitMs, signal);
        } else if (seq === 0 && variant.version === '1.3') {
          // A TLS 1.3 server refuses a client (one without the certificate it requires) after the
          // client's side of the handshake is done: wait for that answer once, as for a ticket.
          await sessionArrival(socket, timeline, waitMs, signal);
        }
      }
    } finally {
      // close_notify first: a server may drop a session from its cache when the connection just dies.
      socket.end(() => socket.destroy());
    }
    refusal = refusedLate();
    if (refusal) return refusedSample(seq, kind, sessionOffered, refusal, performance.now() - start);
    const info = timeline.tls!;
    return {
      seq,
      kind,
      sessionOffered,
      resumed: info.resumed,
      phases: handshakePhases(timeline),
      tlsVersion: info.version,
      alpn: info.alpn || null,
      cipher: info.cipher,
    };
  };

  const samples = params.resumption ? 2 * params.samples : params.samples;
  const run = await runSequence(samples, signal, handshake, 'handshakes');
  const clientCertificate = job.target.tls?.cert
    ? await withoutClientCertificate(job, signal, targetPolicy, run.samples)
    : undefined;
  const answered = run.samples.filter((s) => !s.error);
  const full = answered.filter((s) => s.kind === 'full');
  const resumedKind = answered.filter((s) => s.kind === 'resumed');
  const resumed = resumedKind.filter((s) => s.resumed);
  const tlsOf = (list: HandshakeSample[]) => list.map((s) => s.phases.tls!);
  const handshakeMs = percentiles(tlsOf(full)) ?? null;
  const resumedHandshakeMs = percentiles(tlsOf(resumed)) ?? null;

  const details = {
    tlsVersion: full[0]?.tlsVersion ?? null,
    alpn: full[0]?.alpn ?? null,
    cipher: full[0]?.cipher ?? null,
    connectMs: percentiles(full.map((s) => s.phases.connect!)) ?? null,
    handshakeMs,
    resumedHandshakeMs,
    resumptionSavingMs: handshakeMs && resumedHandshakeMs ? median(tlsOf(full)) - median(tlsOf(resumed)) : null,
    resumption: params.resumption
      ? {
          attempted: resumedKind.length,
          sessionsOffered: resumedKind.filter((s) => s.sessionOffered).length,
          resumed: resumed.length,
        }
      : null,
    certificate: seen.certificate,
    certNotAfter: seen.certificate?.notAfter ?? null,
    samples: run.samples,
    ...(clientCertificate ? { clientCertificate } : {}),
  };
  return {
    // Phases summarise the full handshakes; resumed ones are in `details`.
    summary: {
      ...summarize(full, connector.connections.length, run.durationMs),
      requests: run.samples.length,
      errors: run.samples.length - answered.length,
    },
    details,
    findings: findingsOf(job, run.samples, details, seen.longestSessionWaitMs),
    error: run.stoppedEarly,
  };
};

/** As many full handshakes as the job made, without the target's client certificate: what it costs. */
async function withoutClientCertificate(
  job: JobOf<'tls'>,
  signal: AbortSignal,
  policy: TargetPolicy,
  withCertificate: HandshakeSample[],
): Promise<NonNullable<ProbeDetails<'tls'>['clientCertificate']>> {
  const { params, variant } = job;
  const url = new URL(job.target.url);
  const { cert: _cert, key: _key, passphrase: _passphrase, ...tlsWithout } = job.target.tls!;
  const connector = new TimedConnector({
    tls: tlsWithout,
    proxy: proxyOf(job.target),
    resumeTlsSessions: false,
    alpn: params.alpn,
    timeoutMs: params.timeoutMs,
    tlsVersion: TLS_PROTOCOL_NAME[variant.version],
    policy,
  });
  let refusal: ProbeError | undefined;
  const run = await runSequence(
    params.samples,
    signal,
    async (seq) => {
      if (refusal) return { seq, phases: {}, error: refusal };
      try {
        const socket = (await connector.open(url.hostname, Number(url.port) || 443, true)) as tls.TLSSocket;
        const refusedLate = lateRefusal(socket);
        const timeline = connector.connections.at(-1)!;
        // As in the job's own handshakes: a TLS 1.3 server refuses after the handshake; asked once.
        if (seq === 0 && variant.version === '1.3')
          await sessionArrival(socket, timeline, sessionWaitMs(params.timeoutMs, timeline), signal);
        socket.end(() => socket.destroy());
        refusal = refusedLate();
        return refusal ? { seq, phases: {}, error: refusal } : { seq, phases: handshakePhases(timeline) };
      } catch (err) {
        return { seq, phases: {}, error: classifyError(err) };
      }
    },
    'handshakes',
  );
  const withoutMs = run.samples.flatMap((s) => (s.error ? [] : [s.phases.tls!]));
  const withMs = withCertificate.flatMap((s) => (s.error || s.kind !== 'full' ? [] : [s.phases.tls!]));
  return {
    withoutMs: percentiles(withoutMs) ?? null,
    costMs: withoutMs.length > 0 && withMs.length > 0 ? median(withMs) - median(withoutMs) : null,
    withoutError: run.stoppedEarly,
  };
}

/** A handshake that did not measure: its error, and the time until it failed. */
function refusedSample(
  seq: number,
  kind: HandshakeSample['kind'],
  sessionOffered: boolean,
  error: ProbeError,
  totalMs?: number,
): HandshakeSample {
  return {
    seq,
    kind,
    sessionOffered,
    resumed: false,
    phases: totalMs === undefined ? {} : { total: totalMs },
    tlsVersion: null,
    alpn: null,
    cipher: null,
    error,
  };
}

/** Listens for a TLS alert that comes after the handshake (a late reset must not become an
 * uncaught error either); the getter gives the alert as an error, undefined when none came. */
function lateRefusal(socket: tls.TLSSocket): () => ProbeError | undefined {
  let late: NodeJS.ErrnoException | undefined;
  socket.on('error', (err: NodeJS.ErrnoException) => (late ??= err));
  return () => {
    const alert = tlsAlertOf(late);
    return alert ? classifyError(alert) : undefined;
  };
}

function handshakePhases(c: ConnectionTimeline): PhaseTimes {
  return { ...connectionPhases(c), total: c.secured! - c.start };
}

/** How long to wait for what a server sends after the handshake (a ticket, an alert): four of
 * the connection's TCP connects past SESSION_WAIT_FLOOR_MS, within the job's per-connection bound. */
function sessionWaitMs(timeoutMs: number, timeline: ConnectionTimeline): number {
  return Math.min(timeoutMs, SESSION_WAIT_FLOOR_MS + 4 * (timeline.connected! - timeline.start));
}

/** Waits (bounded) until the connection has delivered a session to resume, unless it already has. */
function sessionArrival(
  socket: tls.TLSSocket,
  timeline: ConnectionTimeline,
  waitMs: number,
  signal: AbortSignal,
): Promise<void> {
  if (timeline.sessionReceived !== undefined || signal.aborted) return Promise.resolve();
  // Without a session by then, the resumed handshake after this one has nothing to offer, and says so.
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      socket.off('session', done);
      socket.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    socket.once('session', done);
    socket.once('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

function distinguishedName(name: tls.Certificate | undefined): string {
  return Object.entries(name ?? {})
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join('+') : String(value)}`)
    .join(', ');
}

function readCertificate(socket: tls.TLSSocket): CertificateInfo | null {
  const cert = socket.getPeerCertificate();
  if (!cert?.valid_to) return null;
  const notAfter = isoDate(dateMs(cert.valid_to));
  return {
    subject: distinguishedName(cert.subject),
    issuer: distinguishedName(cert.issuer),
    notBefore: isoDate(dateMs(cert.valid_from)),
    notAfter,
    daysLeft: notAfter === null ? null : Math.round(((Date.parse(notAfter) - Date.now()) / DAY_MS) * 10) / 10,
    verifyError: socket.authorized ? null : String(socket.authorizationError ?? 'not authorized'),
  };
}

function findingsOf(
  job: JobOf<'tls'>,
  samples: HandshakeSample[],
  details: {
    certificate: CertificateInfo | null;
    resumption: { attempted: number; sessionsOffered: number; resumed: number } | null;
  },
  sessionWaitMs: number,
): Finding[] {
  const where = { region: job.region, target: job.target.name, probe: job.probe };
  const version = job.variant.version;
  const findings: Finding[] = [];

  const answered = samples.filter((s) => !s.error);
  if (version === '1.3' && answered.length === 0 && samples[0]?.error?.code === 'TLS_VERSION_UNSUPPORTED') {
    findings.push(
      finding(
        'TLS13_UNAVAILABLE',
        where,
        `${samples.length} handshakes offering only TLS 1.3 were refused (TLS_VERSION_UNSUPPORTED)`,
        {
          refusedHandshakes: samples.length,
        },
      ),
    );
  }

  const resumption = details.resumption;
  if (resumption && resumption.attempted > 0 && resumption.resumed === 0) {
    const fullHandshakes = answered.filter((s) => s.kind === 'full').length;
    findings.push(
      finding(
        'NO_SESSION_RESUMPTION',
        where,
        resumption.sessionsOffered > 0
          ? `offered the session of the full TLS ${version} handshake before it ${resumption.sessionsOffered} times; the server resumed none`
          : `the server issued no session ticket or id within ${Math.round(sessionWaitMs)} ms of ${fullHandshakes} full TLS ${version} handshakes: nothing to resume`,
        {
          tlsVersion: version,
          attempted: resumption.attempted,
          sessionsOffered: resumption.sessionsOffered,
          resumed: 0,
        },
      ),
    );
  }

  const cert = details.certificate;
  const thresholdDays = job.params.certExpiryWarningDays;
  if (cert?.notAfter && cert.daysLeft !== null && cert.daysLeft < thresholdDays) {
    const day = cert.notAfter.slice(0, 10);
    const whole = Math.floor(Math.abs(cert.daysLeft));
    const days = `${whole} day${whole === 1 ? '' : 's'}`;
    // The same sentence from every version's job, so the run keeps one copy (coordinator/analysis.ts).
    // An expired certificate (seen through tls.insecure) is not "soon": it fails every verifying client now.
    findings.push(
      cert.daysLeft < 0
        ? finding(
            'CERT_EXPIRED',
            where,
            `certificate ${cert.subject} (issuer ${cert.issuer}) expired on ${day}, ${days} ago`,
            { notAfter: cert.notAfter, daysLeft: cert.daysLeft },
          )
        : finding(
            'CERT_EXPIRES_SOON',
            where,
            `certificate ${cert.subject} (issuer ${cert.issuer}) expires on ${day}, in ${days} (warning below ${thresholdDays} days)`,
            { notAfter: cert.notAfter, daysLeft: cert.daysLeft, thresholdDays },
          ),
    );
  }
  return findings;
}
