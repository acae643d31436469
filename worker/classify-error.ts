// Maps whatever a request threw to the closed set of codes in contracts/common.ts.
// Codes are matched, never message text (undici's UND_ERR_*, Node's E* and ERR_*, OpenSSL's).
import type { ErrorCode, ProbeError } from '../contracts/common.js';
import type { DnsOutcome } from '../contracts/probes/dns.js';
import { ConnectError } from './http/connector.js';

const BY_CODE: Record<string, ErrorCode> = {
  ENOTFOUND: 'DNS_FAILED',
  EAI_AGAIN: 'DNS_FAILED',
  EAI_FAIL: 'DNS_FAILED',
  ECONNREFUSED: 'CONNECTION_REFUSED',
  ECONNRESET: 'CONNECTION_RESET',
  EPIPE: 'CONNECTION_RESET',
  ETIMEDOUT: 'CONNECT_TIMEOUT',
  UND_ERR_CONNECT_TIMEOUT: 'CONNECT_TIMEOUT',
  UND_ERR_HEADERS_TIMEOUT: 'RESPONSE_TIMEOUT',
  UND_ERR_BODY_TIMEOUT: 'BODY_TIMEOUT',
  UND_ERR_SOCKET: 'SOCKET_CLOSED',
  UND_ERR_CLOSED: 'SOCKET_CLOSED',
  UND_ERR_HEADERS_OVERFLOW: 'RESPONSE_HEADERS_TOO_LARGE',
  // node:http's parser (the `cold` mode's child): the same limit, its own code.
  HPE_HEADER_OVERFLOW: 'RESPONSE_HEADERS_TOO_LARGE',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'HTTP_PROTOCOL_ERROR',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'RESPONSE_TOO_LARGE',
  UND_ERR_ABORTED: 'DEADLINE_EXCEEDED',
  ABORT_ERR: 'DEADLINE_EXCEEDED',
  CERT_HAS_EXPIRED: 'TLS_CERT_EXPIRED',
  CERT_NOT_YET_VALID: 'TLS_CERT_EXPIRED',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS_HOSTNAME_MISMATCH',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS_CERT_UNTRUSTED',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS_CERT_UNTRUSTED',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS_CERT_UNTRUSTED',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'TLS_CERT_UNTRUSTED',
  ERR_SSL_UNSUPPORTED_PROTOCOL: 'TLS_VERSION_UNSUPPORTED',
  ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION: 'TLS_VERSION_UNSUPPORTED',
  ERR_SSL_NO_PROTOCOLS_AVAILABLE: 'TLS_VERSION_UNSUPPORTED',
  // TLS 1.3's certificate_required alert (116): the server asked for a client certificate and got
  // none. It comes after the client's handshake is done, on the first read (the request).
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: 'TLS_CLIENT_CERT_REQUIRED',
  // worker/http/proxy.ts: the proxy did not open the tunnel.
  PROXY_REFUSED: 'PROXY_REFUSED',
  // worker/target-policy.ts: the address is not one this worker may connect to.
  TARGET_REFUSED_BY_POLICY: 'TARGET_REFUSED_BY_POLICY',
  // Thrown by probes' body consumers (worker/http/body.ts).
  UNEXPECTED_BODY: 'UNEXPECTED_BODY',

  // Not here: ERR_SSL_WRONG_VERSION_NUMBER is what an answer that is not TLS at all looks like
  // (https:// to an HTTP port), so it stays a failed handshake rather than a version question.
  // worker/http/wire.ts: hand-driven exchanges (raw HTTP/1.1 heads, HTTP/2 sessions)
  EWIRE_CLOSED: 'SOCKET_CLOSED',
  EWIRE_TIMEOUT: 'RESPONSE_TIMEOUT',
  EWIRE_BODY_TIMEOUT: 'BODY_TIMEOUT',
  EWIRE_MALFORMED: 'HTTP_PROTOCOL_ERROR',
  EWIRE_HEAD_TOO_LARGE: 'RESPONSE_HEADERS_TOO_LARGE',
  EWIRE_TOO_LARGE: 'RESPONSE_TOO_LARGE',
  // node:http2: a GOAWAY with an error code destroys the session with this one; a stream the
  // peer reset (RST_STREAM with an error code) is destroyed with the other.
  ERR_HTTP2_SESSION_ERROR: 'HTTP2_GOAWAY',
  ERR_HTTP2_STREAM_ERROR: 'HTTP2_STREAM_RESET',
};

/** The peer dropped the connection in the middle of the TLS handshake (no alert: a reset or a bare close). */
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE']);

function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  // Seen errors end the walk: a cause chain that leads back to itself must not loop.
  const seen = new Set<unknown>();
  for (
    let e = err as { code?: unknown; name?: unknown; cause?: unknown } | undefined;
    e && codes.length < 5 && !seen.has(e);
    e = e.cause as typeof e
  ) {
    seen.add(e);
    if (typeof e.code === 'string') codes.push(e.code);
    if (e.name === 'AbortError' || e.name === 'TimeoutError') codes.push('ABORT_ERR');
    // undici 7 looks llhttp's error number up in a table keyed by name, so its parser errors come without a code.
    if (e.name === 'HTTPParserError' && e.code === undefined) codes.push('HPE_UNKNOWN');
  }
  return codes;
}

export function classifyError(err: unknown): ProbeError {
  const message = err instanceof Error ? err.message : String(err);
  const codes = codesOf(err);
  if (err instanceof ConnectError && err.phase === 'tls' && RESET_CODES.has(err.code))
    return { code: 'TLS_HANDSHAKE_RESET', message };
  for (const code of codes) {
    const mapped = BY_CODE[code];
    if (mapped === 'TLS_CLIENT_CERT_REQUIRED')
      return {
        code: mapped,
        message: `the server requires a client certificate (give tls.cert and tls.key): ${message}`,
      };
    if (mapped) return { code: mapped, message };
  }
  if (err instanceof ConnectError && err.phase === 'tls') return { code: 'TLS_HANDSHAKE_FAILED', message };
  if (err instanceof ConnectError && err.phase === 'resolve') return { code: 'DNS_FAILED', message };
  if (codes.some((c) => c.startsWith('HPE_') || c === 'UND_ERR_INVALID_ARG'))
    return { code: 'HTTP_PROTOCOL_ERROR', message };
  if (codes.some((c) => c.startsWith('ERR_HTTP2_'))) return { code: 'HTTP2_ERROR', message };
  if (codes.some((c) => c.startsWith('ERR_SSL_'))) return { code: 'TLS_HANDSHAKE_FAILED', message };
  return { code: 'INTERNAL_ERROR', message };
}

// node:dns's resolver (c-ares), for the dns probe: a lookup's outcome in DNS's terms, and the code
// of one that failed. NODATA is an answer (the name exists, without a record of that type).
const DNS_OUTCOME_BY_CODE: Record<string, DnsOutcome> = {
  ENODATA: 'nodata',
  ENOTFOUND: 'nxdomain',
  ESERVFAIL: 'servfail',
  EREFUSED: 'refused',
  ENOTIMP: 'refused',
  ETIMEOUT: 'timeout',
  ECONNREFUSED: 'unreachable',
  EBADRESP: 'bad-response',
  EFORMERR: 'bad-response',
  EOF: 'bad-response',
};

/** What a c-ares lookup's error says: its outcome, and (unless it is NODATA) DNS_FAILED naming it. */
export function classifyDnsError(err: unknown): { outcome: DnsOutcome; error?: ProbeError } {
  const code = codesOf(err)[0];
  const outcome = (code && DNS_OUTCOME_BY_CODE[code]) || 'other';
  if (outcome === 'nodata') return { outcome };
  const message = err instanceof Error ? err.message : String(err);
  return { outcome, error: { code: 'DNS_FAILED', message: `${outcome}: ${message}` } };
}
