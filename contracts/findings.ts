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
    advice:
      'Enable keep-alive on the server (or the proxy in front of it); clients cannot reuse connections until it does',
  },
  NAGLE_DELAYED_ACK_STALL: {
    severity: 'warning',
    title: 'Reused requests stall about 40 ms (Nagle meets delayed ACK)',
    situation: 'Server writes headers and body in separate packets with Nagle on',
    advice: 'Set TCP_NODELAY on the server socket, or write headers and body in one write',
  },
  // retransmission timeouts (coordinator/analysis-retransmissions.ts)
  CONNECT_RETRANSMITTED: {
    severity: 'warning',
    title: 'Some connects waited for a retransmitted SYN (1 s or more each)',
    situation:
      'New connections sometimes lose their SYN or SYN-ACK and wait a whole retransmission timeout (1 s, then more)',
    advice:
      'Reuse connections so fewer requests pay for a connect; find the loss (the path, or a full listen queue on the server: nstat TcpExtListenOverflows); keep connect timeouts well above 1 s + RTT, where one lost SYN would fail the request',
  },
  HANDSHAKE_RETRANSMITTED: {
    severity: 'warning',
    title: 'Some TLS handshakes waited for a retransmission timeout (200 ms or more each)',
    situation: 'A flight of the TLS handshake is sometimes lost and resent only after a retransmission timeout',
    advice:
      'Reuse connections and resume sessions so fewer requests handshake; prefer TLS 1.3 (one flight fewer to lose); find the loss on the path; keep the certificate chain short (fewer packets per flight)',
  },
  // compression
  COMPRESSION_WITHOUT_VARY: {
    severity: 'warning',
    title: 'Compressed responses without Vary: Accept-Encoding',
    situation: 'The encoding depends on Accept-Encoding, but responses lack Vary: Accept-Encoding',
    advice:
      'Send Vary: Accept-Encoding on every response whose encoding depends on the request, so caches keep the versions apart',
  },
  COMPRESSES_TINY_RESPONSE: {
    severity: 'info',
    title: 'Tiny responses are compressed, and grow',
    situation: 'Tiny responses (under about 1 KB) are compressed',
    advice:
      'Skip compression under about 1 KB (e.g. nginx gzip_min_length 1024): the gzip header and trailer alone make them bigger',
  },
  COMPRESSES_INCOMPRESSIBLE: {
    severity: 'warning',
    title: 'Already-compressed bodies are compressed again',
    situation: 'Images, video, ZIP and other already-compressed bodies are compressed again',
    advice:
      'Compress text types only (HTML, CSS, JS, JSON, SVG, XML); already-compressed media gain nothing and cost CPU',
  },
  NO_COMPRESSION_FOR_TEXT: {
    severity: 'warning',
    title: 'Text over 1 KB is sent uncompressed to clients that accept compression',
    situation: 'JSON, HTML, CSS or JS over 1 KB is sent uncompressed',
    advice: 'Enable gzip at level 6 (or brotli) for text types, or pre-compress static files at deploy time',
  },
  GZIP_LEVEL_WASTE: {
    severity: 'info',
    title: 'A high gzip level costs several times the CPU for a few per cent of bytes',
    situation: 'The server compresses on the fly with a high gzip level',
    advice:
      'Use gzip level 6 for on-the-fly compression; keep the highest levels for files compressed once at deploy time',
  },
  // cors
  CORS_WILDCARD_WITH_CREDENTIALS: {
    severity: 'warning',
    title: 'Access-Control-Allow-Origin: * together with Allow-Credentials: true',
    situation: 'CORS answers Access-Control-Allow-Origin: * with Access-Control-Allow-Credentials: true',
    advice:
      'Browsers refuse credentials with a wildcard: echo the one allowed origin (from an allowlist) with Allow-Credentials, and Vary: Origin',
  },
  CORS_REFLECTS_ANY_ORIGIN: {
    severity: 'critical',
    title: 'CORS echoes any Origin back',
    situation: 'CORS echoes any Origin back in Access-Control-Allow-Origin',
    advice:
      'Check the Origin against an allowlist before echoing it; a reflected origin lets every site read the responses (logged-in ones too, with credentials)',
  },
  CORS_MISSING_VARY_ORIGIN: {
    severity: 'warning',
    title: 'The CORS answer depends on Origin, without Vary: Origin',
    situation: 'Access-Control-Allow-Origin depends on the Origin, but responses lack Vary: Origin',
    advice:
      "Send Vary: Origin whenever the answer depends on the request's Origin, so a cache or CDN never serves one origin's headers to another",
  },
  CORS_PREFLIGHT_MISSING_METHOD: {
    severity: 'warning',
    title: 'The preflight does not allow the method the page sends',
    situation: 'The CORS preflight does not allow the method the page needs',
    advice: 'List the method in Access-Control-Allow-Methods; until then the browser never sends the request',
  },
  CORS_PREFLIGHT_MISSING_HEADER: {
    severity: 'warning',
    title: 'The preflight does not allow a header the page sends',
    situation: 'The CORS preflight does not allow a request header the page needs',
    advice:
      'List the header in Access-Control-Allow-Headers (a wildcard does not cover Authorization, nor anything with credentials)',
  },
  CORS_ALLOWED_ORIGIN_REFUSED: {
    severity: 'warning',
    title: 'An origin that should be allowed is refused',
    situation: 'An origin the API should allow gets no Access-Control-Allow-Origin',
    advice:
      "Add the origin to the server's allowlist exactly as the browser sends it (scheme, host and port, no trailing slash)",
  },
  CORS_CREDENTIALS_NOT_ALLOWED: {
    severity: 'warning',
    title: 'The origin is allowed, but not with credentials',
    situation:
      'A page that sends credentials (cookies, Authorization) is refused: the answer names its origin but lacks Access-Control-Allow-Credentials: true',
    advice:
      'Answer Access-Control-Allow-Credentials: true with the exact origin echoed (never *), and Vary: Origin; the allowlist already has the origin',
  },
  CORS_REFUSED_ORIGIN_STILL_SERVED: {
    severity: 'info',
    title: 'A refused origin still gets the full response: CORS protects nothing on the server',
    situation: 'Unwanted callers must be blocked (CORS refused the origin, yet the request ran)',
    advice:
      'Authentication, CSRF tokens and rate limits: CORS only decides what a browser lets the page read; curl, scripts and apps ignore it',
  },
  // drain
  UNREAD_BODY_BREAKS_REUSE: {
    severity: 'warning',
    title: 'Response bodies closed before their end cost a new connection each',
    situation: 'An HTTP/1.1 client closes response bodies without reading them to the end',
    advice:
      'Read bodies to the end, or drain them within a cap (Go 1.27: 256 KB / 50 ms) before closing; skip the drain on Connection: close; HTTP/2 needs none',
  },
  // tls
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
  CERT_EXPIRED: {
    severity: 'critical',
    title: 'The server certificate has expired',
    situation: 'Server certificate has expired: every client that checks certificates refuses the connection',
    advice: 'Renew the certificate now, then automate renewal and alert on its expiry time well before it passes',
  },
  // http2
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
    advice:
      'Fine for browsers (they never use h2c); for service-to-service calls over plain HTTP, enable h2c prior knowledge if you want multiplexing',
  },
  SERVER_NO_ANSWER: {
    severity: 'warning',
    title: 'The server accepts connections but answers nothing',
    situation: 'Server accepts TCP connections and never answers: not HTTP/2, not HTTP/1.1',
    advice:
      'Check what holds the port (a hung process, a full accept backlog, a proxy without an upstream); every client waits out its timeout',
  },
  HTTP1_ONLY_MANY_CONNECTIONS: {
    severity: 'info',
    title: 'HTTP/1.1 only: concurrent requests need one connection each',
    situation: 'Server speaks only HTTP/1.1, so concurrent requests open several connections where HTTP/2 needs one',
    advice:
      'Offer HTTP/2 so concurrent requests share one connection (one handshake); meanwhile keep HTTP/1.1 connections alive and pooled',
  },
  H3_ADVERTISED: {
    severity: 'info',
    title: 'The server advertises HTTP/3 (Alt-Svc)',
    situation: 'Server advertises HTTP/3 in Alt-Svc, so browsers will try QUIC (UDP) on that port',
    advice:
      'Keep UDP to that port open end to end and the HTTP/3 endpoint serving the same content; drop the header where it is not (clients wait on a dead QUIC port before falling back)',
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

/** Where a finding was seen: the job's region, target and probe. */
export interface FindingPlace {
  region: string;
  target: string;
  probe: string;
}

/** A named rule: the finding of one code that its input shows, or none. */
export type FindingRule<I> = (input: I, where: FindingPlace) => Finding | undefined;

/** The findings of the rules that fire on `input`, in the list's order. */
export function applyRules<I>(rules: readonly FindingRule<I>[], input: I, where: FindingPlace): Finding[] {
  return rules.flatMap((rule) => rule(input, where) ?? []);
}

/** Builds a finding with the catalogue's severity. */
export function finding(code: FindingCode, where: FindingPlace, evidence: string, data: Finding['data'] = {}): Finding {
  return { code, severity: FINDINGS[code].severity, ...where, evidence, data };
}
