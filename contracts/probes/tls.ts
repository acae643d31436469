// The `tls` probe: what does the handshake cost, and can it be avoided?
import { z } from 'zod';
import { distinct, percentilesSchema, phaseTimesSchema, probeErrorSchema } from '../common.js';
import { defineProbe, sequential } from './define.js';

export const TLS_VERSIONS = ['1.2', '1.3'] as const;
export type TlsVersion = (typeof TLS_VERSIONS)[number];

/** Node's name of a version, as `getProtocol()` reports it and `minVersion` takes it. */
export const TLS_PROTOCOL_NAME = { '1.2': 'TLSv1.2', '1.3': 'TLSv1.3' } as const satisfies Record<TlsVersion, string>;

export const handshakeSampleSchema = z.strictObject({
  /** 0-based position in the job's sequence; with resumption, full and resumed alternate. */
  seq: z.int().nonnegative(),
  /** `full`: no session offered; `resumed`: the session of the full handshake just before offered. */
  kind: z.enum(['full', 'resumed']),
  /** A session was there to offer (false when the server issued none after the full handshake). */
  sessionOffered: z.boolean(),
  /** The server accepted the offered session (`isSessionReused()`). */
  resumed: z.boolean(),
  /** `resolve` (host names only), `connect` (TCP), `tls` (the handshake), `total`. */
  phases: phaseTimesSchema,
  tlsVersion: z.string().nullable(),
  /** The protocol the server selected by ALPN; null when it selected none. */
  alpn: z.string().nullable(),
  cipher: z.string().nullable(),
  error: probeErrorSchema.optional(),
});
export type HandshakeSample = z.infer<typeof handshakeSampleSchema>;

export const certificateSchema = z.strictObject({
  /** e.g. "CN=localhost" */
  subject: z.string(),
  issuer: z.string(),
  /** null when the certificate's date is no date (a month 13, a year past 275760): what the server sent is data, not a failure. */
  notBefore: z.iso.datetime().nullable(),
  notAfter: z.iso.datetime().nullable(),
  /** Days from the handshake to `notAfter`; negative once expired; null when `notAfter` is. */
  daysLeft: z.number().nullable(),
  /** Why the certificate would have been refused, when the target's `tls.insecure` let the handshake through. */
  verifyError: z.string().nullable(),
});
export type CertificateInfo = z.infer<typeof certificateSchema>;

export const tlsProbe = defineProbe({
  kind: 'tls',
  summary: 'N fresh TCP + TLS handshakes per TLS version, full and resumed, with connect and handshake timed apart',
  schemes: ['https'],
  question: 'what does the handshake cost, and can it be avoided?',
  jobs: 'one job per TLS version in `versions` (`1.2`, `1.3`); https targets only (see [`tls` parameters](probes.md#tls-parameters))',
  findings: {
    TLS13_UNAVAILABLE: {
      severity: 'warning',
      title: 'The server does not speak TLS 1.3',
      situation: 'Server refuses TLS 1.3 (TLS 1.2 costs one more round trip per new connection)',
      advice: 'Enable TLS 1.3 on the server or the proxy terminating TLS; keep 1.2 for old clients',
      when: 'the `1.3` job: every handshake was refused as an unsupported version',
    },
    NO_SESSION_RESUMPTION: {
      severity: 'warning',
      title: 'The server does not resume TLS sessions',
      situation: 'Server never resumes a TLS session, so every new connection pays a full handshake',
      advice: 'Enable session tickets (or a shared session cache across the servers behind the name)',
      when: 'with `resumption`, the server resumed none of the sessions offered (or issued none to offer)',
    },
    CERT_EXPIRES_SOON: {
      severity: 'warning',
      title: 'The server certificate expires soon',
      situation: 'Server certificate expires within the warning threshold',
      advice: 'Renew the certificate (and automate renewal); alert on its expiry time',
      when: 'the certificate has fewer than `certExpiryWarningDays` days left; one per target however many versions saw it',
    },
    CERT_EXPIRED: {
      severity: 'critical',
      title: 'The server certificate has expired',
      situation: 'Server certificate has expired: every client that checks certificates refuses the connection',
      advice: 'Renew the certificate now, then automate renewal and alert on its expiry time well before it passes',
      when: '(critical) the certificate has expired (seen through `tls.insecure`: with verification on, the handshake fails with `TLS_CERT_EXPIRED`); one per target',
    },
  },
  params: z.strictObject({
    /** Full handshakes per version; as many resumed ones again when `resumption` is on. */
    samples: z.int().min(1).max(1000).default(20),
    /** One job per version; each offers and accepts only that version. */
    versions: distinct(z.array(z.enum(TLS_VERSIONS)).min(1), 'version').default(['1.2', '1.3']),
    /** Measure resumed handshakes beside the full ones. */
    resumption: z.boolean().default(true),
    /** ALPN protocols offered, in order (what a browser offers by default). */
    alpn: z.array(z.string().min(1).max(255)).min(1).max(8).default(['h2', 'http/1.1']),
    /** Bound on each connection: resolve, connect and handshake. */
    timeoutMs: z.int().min(1).max(120_000).default(10_000),
    /** CERT_EXPIRES_SOON when the certificate has fewer days left than this (CERT_EXPIRED once it has none). */
    certExpiryWarningDays: z.int().min(0).max(3650).default(21),
  }),
  variant: z.strictObject({
    version: z.enum(TLS_VERSIONS),
  }),
  details: z.strictObject({
    /** Negotiated on the full handshakes (the first that succeeded); null when none did. */
    tlsVersion: z.string().nullable(),
    alpn: z.string().nullable(),
    cipher: z.string().nullable(),
    /** TCP connect of the full handshakes. */
    connectMs: percentilesSchema.nullable(),
    /** The TLS handshake alone (after TCP connect), full handshakes. */
    handshakeMs: percentilesSchema.nullable(),
    /** The TLS handshake alone, handshakes the server resumed; null when none was. */
    resumedHandshakeMs: percentilesSchema.nullable(),
    /** median(full) − median(resumed) handshake: what resumption saves per connection. */
    resumptionSavingMs: z.number().nullable(),
    /** Null when resumption was not asked for. */
    resumption: z
      .strictObject({
        attempted: z.int().nonnegative(),
        sessionsOffered: z.int().nonnegative(),
        resumed: z.int().nonnegative(),
      })
      .nullable(),
    /** Read on a full handshake (a resumed one does not show it). */
    certificate: certificateSchema.nullable(),
    certNotAfter: z.iso.datetime().nullable(),
    samples: z.array(handshakeSampleSchema),
    /** A target with a client certificate: as many full handshakes again without it, so its cost
     * (the client's Certificate and CertificateVerify) shows. Absent without a client certificate. */
    clientCertificate: z
      .strictObject({
        /** The handshake alone without the certificate (full handshakes); null when none succeeded. */
        withoutMs: percentilesSchema.nullable(),
        /** median(full with it) − median(full without it). */
        costMs: z.number().nullable(),
        /** Why handshakes without it failed (a server that requires one refuses them in TLS 1.2). */
        withoutError: probeErrorSchema.nullable(),
      })
      .optional(),
  }),
  variants: (params) => params.versions.map((version) => ({ version })),
  demands: (params) =>
    sequential({
      value: params.samples * (params.resumption ? 2 : 1),
      param: 'samples',
      how: `${params.samples} samples${params.resumption ? ' x 2 (full and resumed)' : ''}`,
    }),
});
