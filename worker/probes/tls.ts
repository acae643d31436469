// `tls`: what does the handshake cost, and can it be avoided?
// One job per TLS version. N full handshakes on fresh TCP connections; with resumption on,
// each is followed by one offering the session the full handshake left, so full and resumed
// alternate and any drift in the machine's load hits both alike. The connector times TCP
// connect and the handshake apart; the certificate is read on a full handshake, because a
// resumed one does not show it.
import { performance } from 'node:perf_hooks';
import type tls from 'node:tls';
import type { PhaseTimes, ProbeError } from '../../contracts/common.js';
import { applyRules } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { TLS_PROTOCOL_NAME, type CertificateInfo, type HandshakeSample } from '../../contracts/probes/tls.js';
import { median, percentiles } from '../../common/stats.js';
import { classifyError } from '../classify-error.js';
import { connectionPhases, TimedConnector, tlsAlertOf, type ConnectionTimeline } from '../http/connector.js';
import { proxyOf } from '../http/proxy.js';
import { runSequence, summarize } from '../http/sequence.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import type { AddressResolver } from '../target-policy.js';
import type { Probe } from './probe.js';
import { TLS_RULES } from './tls-findings.js';
import { dateMs, isoDate } from '../../common/target-values.js';

const DAY_MS = 86_400_000;
/** A session ticket comes about one round trip after the handshake; TCP connect took one. This is the least we wait. */
const SESSION_WAIT_FLOOR_MS = 200;

export const runTlsProbe: Probe<'tls'> = async (job, { signal, addresses }) => {
  const { params, variant } = job;
  const url = new URL(job.target.url);
  const connector = handshakeConnector(job, addresses, job.target.tls, params.resumption);
  const handshakes = new Handshakes(job, connector, url, signal);

  const samples = params.resumption ? 2 * params.samples : params.samples;
  const run = await runSequence(samples, signal, (seq) => handshakes.next(seq), 'handshakes');
  const clientCertificate = job.target.tls?.cert
    ? await withoutClientCertificate(job, signal, addresses, run.samples)
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
    certificate: handshakes.certificate,
    certNotAfter: handshakes.certificate?.notAfter ?? null,
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
    findings: applyRules(
      TLS_RULES,
      {
        version: variant.version,
        samples: run.samples,
        details,
        certExpiryWarningDays: params.certExpiryWarningDays,
        sessionWaitMs: handshakes.longestSessionWaitMs,
      },
      { region: job.region, target: job.target.name, probe: job.probe },
    ),
    error: run.stoppedEarly,
  };
};

/** One job's handshakes, in turn: what they saw (the certificate, the longest wait for a session),
 * and a refusal that ends them. */
class Handshakes {
  certificate: CertificateInfo | null = null;
  longestSessionWaitMs = 0;
  /** A server that refused the client after a handshake (TLS 1.3's certificate_required) refuses every one: not asked again. */
  private refusal: ProbeError | undefined;

  constructor(
    private readonly job: JobOf<'tls'>,
    private readonly connector: TimedConnector,
    private readonly url: URL,
    private readonly signal: AbortSignal,
  ) {}

  /** Handshake `seq`: full, or (resumption on, odd seq) offering the session the full one before it left. */
  async next(seq: number): Promise<HandshakeSample> {
    const kind = this.job.params.resumption && seq % 2 === 1 ? 'resumed' : 'full';
    if (this.refusal) return refusedSample(seq, kind, false, this.refusal);
    if (kind === 'full') this.connector.forgetTlsSession();
    const sessionOffered = this.connector.hasTlsSession;
    const start = performance.now();
    let socket: tls.TLSSocket;
    try {
      socket = (await this.connector.open(this.url.hostname, Number(this.url.port) || 443, true)) as tls.TLSSocket;
    } catch (err) {
      return refusedSample(seq, kind, sessionOffered, classifyError(err), performance.now() - start);
    }
    // Nothing is sent on this socket; a late reset must not become an uncaught error, and a late
    // TLS alert is the server's answer (below).
    const refusedLate = lateRefusal(socket);
    const timeline = this.connector.connections.at(-1)!;
    try {
      if (kind === 'full') await this.afterFullHandshake(seq, socket, timeline);
    } finally {
      // close_notify first: a server may drop a session from its cache when the connection just dies.
      socket.end(() => socket.destroy());
    }
    this.refusal = refusedLate();
    if (this.refusal) return refusedSample(seq, kind, sessionOffered, this.refusal, performance.now() - start);
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
  }

  /** Reads the certificate, then waits for what the server sends after the handshake: the session
   * the next handshake resumes, or once, on TLS 1.3, a refusal of the client (certificate_required),
   * which comes after the client's side of the handshake is done. */
  private async afterFullHandshake(seq: number, socket: tls.TLSSocket, timeline: ConnectionTimeline): Promise<void> {
    this.certificate ??= readCertificate(socket);
    const waitMs = sessionWaitMs(this.job.params.timeoutMs, timeline);
    if (this.job.params.resumption) {
      this.longestSessionWaitMs = Math.max(this.longestSessionWaitMs, waitMs);
      await sessionArrival(socket, timeline, waitMs, this.signal);
    } else if (seq === 0 && this.job.variant.version === '1.3') {
      await sessionArrival(socket, timeline, waitMs, this.signal);
    }
  }
}

/** As many full handshakes as the job made, without the target's client certificate: what it costs. */
async function withoutClientCertificate(
  job: JobOf<'tls'>,
  signal: AbortSignal,
  policy: AddressResolver,
  withCertificate: HandshakeSample[],
): Promise<NonNullable<ProbeDetails<'tls'>['clientCertificate']>> {
  const { params, variant } = job;
  const url = new URL(job.target.url);
  const { cert: _cert, key: _key, passphrase: _passphrase, ...tlsWithout } = job.target.tls!;
  const connector = handshakeConnector(job, policy, tlsWithout, false);
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

/** A connector offering only the job's TLS version, with the target's TLS settings or `tls`. */
function handshakeConnector(
  job: JobOf<'tls'>,
  policy: AddressResolver,
  tls: JobOf<'tls'>['target']['tls'],
  resumeTlsSessions: boolean,
): TimedConnector {
  return new TimedConnector({
    tls,
    proxy: proxyOf(job.target),
    resumeTlsSessions,
    alpn: job.params.alpn,
    timeoutMs: job.params.timeoutMs,
    tlsVersion: TLS_PROTOCOL_NAME[job.variant.version],
    policy,
  });
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
