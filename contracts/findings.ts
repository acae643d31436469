// The catalogue of findings: named, documented diagnoses. A probe or the run analysis
// emits a finding by code; its title and advice come from here, so the decision table
// and the docs never drift from the code.
import { z } from 'zod';
import { nameSchema, SEVERITIES, type Severity } from './common.js';

interface FindingSpec {
  severity: Severity;
  /** One line: what was seen. */
  title: string;
  /** The situation column of the decision table. */
  situation: string;
  /** What to do about it. */
  advice: string;
}

export const FINDINGS = {
  SERVER_CLOSES_EVERY_CONNECTION: {
    severity: 'warning',
    title: 'The server closes the connection after every response',
    situation: 'Server answers every request with Connection: close',
    advice: 'Enable keep-alive on the server (or the proxy in front of it); clients cannot reuse connections until it does',
  },
  NAGLE_DELAYED_ACK_STALL: {
    severity: 'warning',
    title: 'Reused requests stall about 40 ms (Nagle meets delayed ACK)',
    situation: 'Server writes headers and body in separate packets with Nagle on',
    advice: 'Set TCP_NODELAY on the server socket, or write headers and body in one write',
  },
  TLS13_UNAVAILABLE: {
    severity: 'warning',
    title: 'The server does not speak TLS 1.3',
    situation: 'Server refuses TLS 1.3 (TLS 1.2 costs one more round trip per new connection)',
    advice: 'Enable TLS 1.3 on the server or the proxy terminating TLS; keep 1.2 for old clients',
  },
  NO_SESSION_RESUMPTION: {
    severity: 'warning',
    title: 'The server does not resume TLS sessions',
    situation: 'Server never resumes a TLS session, so every new connection pays a full handshake',
    advice: 'Enable session tickets (or a shared session cache across the servers behind the name)',
  },
  CERT_EXPIRES_SOON: {
    severity: 'warning',
    title: 'The server certificate expires soon',
    situation: 'Server certificate expires within the warning threshold',
    advice: 'Renew the certificate (and automate renewal); alert on its expiry time',
  },
  H2_NOT_NEGOTIATED: {
    severity: 'warning',
    title: 'HTTP/2 is not negotiated over TLS (ALPN)',
    situation: 'Server does not offer h2 by ALPN, so browsers and clients stay on HTTP/1.1',
    advice: 'Enable HTTP/2 on the server or proxy terminating TLS (ALPN h2 and http/1.1)',
  },
  H2C_UNSUPPORTED: {
    severity: 'info',
    title: 'HTTP/2 without TLS (h2c) is not supported',
    situation: 'Server speaks no h2c: neither prior knowledge nor Upgrade: h2c',
    advice: 'Fine for browsers (they never use h2c); for service-to-service calls over plain HTTP, enable h2c prior knowledge if you want multiplexing',
  },
  HTTP1_ONLY_MANY_CONNECTIONS: {
    severity: 'info',
    title: 'HTTP/1.1 only: concurrent requests need one connection each',
    situation: 'Server speaks only HTTP/1.1, so concurrent requests open several connections where HTTP/2 needs one',
    advice: 'Offer HTTP/2 so concurrent requests share one connection (one handshake); meanwhile keep HTTP/1.1 connections alive and pooled',
  },
} as const satisfies Record<string, FindingSpec>;

export type FindingCode = keyof typeof FINDINGS;
export const FINDING_CODES = Object.keys(FINDINGS) as [FindingCode, ...FindingCode[]];

export const findingSchema = z.strictObject({
  code: z.enum(FINDING_CODES),
  severity: z.enum(SEVERITIES),
  region: nameSchema,
  target: nameSchema,
  probe: z.string(),
  /** A sentence with the numbers from this run that support the diagnosis. */
  evidence: z.string(),
  /** The same numbers, machine-readable. */
  data: z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])).default({}),
});
export type Finding = z.infer<typeof findingSchema>;

/** Builds a finding with the catalogue's severity. */
export function finding(
  code: FindingCode,
  where: { region: string; target: string; probe: string },
  evidence: string,
  data: Finding['data'] = {},
): Finding {
  return { code, severity: FINDINGS[code].severity, ...where, evidence, data };
}
