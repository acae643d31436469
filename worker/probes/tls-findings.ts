// The tls probe's findings: one small rule per finding code, read from the job's handshakes, its
// details and the plan's certificate threshold. TLS_RULES is the order they run in.
import { finding, type FindingRule } from '../../contracts/findings.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import type { HandshakeSample, TlsVersion } from '../../contracts/probes/tls.js';

export interface TlsFindingInput {
  /** The job's TLS version: its only offer. */
  version: TlsVersion;
  samples: HandshakeSample[];
  details: Pick<ProbeDetails<'tls'>, 'certificate' | 'resumption'>;
  /** The plan's `certExpiryWarningDays`. */
  certExpiryWarningDays: number;
  /** The longest the probe waited for a session after a full handshake. */
  sessionWaitMs: number;
}

/** TLS13_UNAVAILABLE: every handshake offering only TLS 1.3 was refused as an unsupported version. */
export const tls13Unavailable: FindingRule<TlsFindingInput> = ({ version, samples }, where) => {
  if (version !== '1.3' || samples.some((s) => !s.error) || samples[0]?.error?.code !== 'TLS_VERSION_UNSUPPORTED')
    return undefined;
  return finding(
    'TLS13_UNAVAILABLE',
    where,
    `${samples.length} handshakes offering only TLS 1.3 were refused (TLS_VERSION_UNSUPPORTED)`,
    { refusedHandshakes: samples.length },
  );
};

/** NO_SESSION_RESUMPTION: resumed handshakes were tried and none resumed. */
export const noSessionResumption: FindingRule<TlsFindingInput> = (input, where) => {
  const { version, samples, details, sessionWaitMs } = input;
  const resumption = details.resumption;
  if (!resumption || resumption.attempted === 0 || resumption.resumed > 0) return undefined;
  const fullHandshakes = samples.filter((s) => !s.error && s.kind === 'full').length;
  return finding(
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
  );
};

/** The certificate's last day and the whole days from the handshake to it ("3 days"). */
function expiry(cert: { notAfter: string; daysLeft: number }): { day: string; days: string } {
  const whole = Math.floor(Math.abs(cert.daysLeft));
  return { day: cert.notAfter.slice(0, 10), days: `${whole} day${whole === 1 ? '' : 's'}` };
}

/** The certificate seen, when its end date is a date. */
function datedCertificate({ details }: TlsFindingInput) {
  const cert = details.certificate;
  return cert?.notAfter && cert.daysLeft !== null
    ? { ...cert, notAfter: cert.notAfter, daysLeft: cert.daysLeft }
    : null;
}

// The certificate rules write the same sentence from every version's job, so the run keeps one copy
// (coordinator/analysis.ts).

/** CERT_EXPIRED: the certificate (seen through tls.insecure) has expired: not "soon", it fails every verifying client now. */
export const certExpired: FindingRule<TlsFindingInput> = (input, where) => {
  const cert = datedCertificate(input);
  if (!cert || cert.daysLeft >= 0) return undefined;
  const { day, days } = expiry(cert);
  return finding(
    'CERT_EXPIRED',
    where,
    `certificate ${cert.subject} (issuer ${cert.issuer}) expired on ${day}, ${days} ago`,
    {
      notAfter: cert.notAfter,
      daysLeft: cert.daysLeft,
    },
  );
};

/** CERT_EXPIRES_SOON: the certificate ends within the plan's `certExpiryWarningDays`. */
export const certExpiresSoon: FindingRule<TlsFindingInput> = (input, where) => {
  const cert = datedCertificate(input);
  const thresholdDays = input.certExpiryWarningDays;
  if (!cert || cert.daysLeft < 0 || cert.daysLeft >= thresholdDays) return undefined;
  const { day, days } = expiry(cert);
  return finding(
    'CERT_EXPIRES_SOON',
    where,
    `certificate ${cert.subject} (issuer ${cert.issuer}) expires on ${day}, in ${days} (warning below ${thresholdDays} days)`,
    { notAfter: cert.notAfter, daysLeft: cert.daysLeft, thresholdDays },
  );
};

export const TLS_RULES: readonly FindingRule<TlsFindingInput>[] = [
  tls13Unavailable,
  noSessionResumption,
  certExpired,
  certExpiresSoon,
];
