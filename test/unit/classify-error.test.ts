// worker/classify-error.ts as a table: what a request threw in, the closed error code out. The
// undici errors are undici's own classes; Node's and OpenSSL's are errors with the codes Node
// gives them (a real expired or self-signed certificate is in test/integration/tls-probe.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errors } from 'undici';
import type { ErrorCode } from '../../contracts/common.js';
import { classifyDnsError, classifyError } from '../../worker/classify-error.js';
import { ConnectError } from '../../worker/http/connector.js';

/** An error as Node throws it: a message and a `code`. */
const nodeError = (code: string, message = `${code} from node`) => Object.assign(new Error(message), { code });

const cases: { name: string; error: unknown; code: ErrorCode }[] = [
  // DNS
  { name: 'no such host', error: nodeError('ENOTFOUND', 'getaddrinfo ENOTFOUND nowhere.invalid'), code: 'DNS_FAILED' },
  { name: 'resolver temporarily failing', error: nodeError('EAI_AGAIN'), code: 'DNS_FAILED' },
  {
    name: 'our connector failing to resolve, with no code of its own',
    error: new ConnectError('resolve failed', 'EUNKNOWN', 'resolve'),
    code: 'DNS_FAILED',
  },
  // TCP
  { name: 'closed port', error: nodeError('ECONNREFUSED'), code: 'CONNECTION_REFUSED' },
  { name: 'reset after connecting', error: nodeError('ECONNRESET'), code: 'CONNECTION_RESET' },
  { name: 'writing to a closed socket', error: nodeError('EPIPE'), code: 'CONNECTION_RESET' },
  { name: "the kernel's connect timeout", error: nodeError('ETIMEDOUT'), code: 'CONNECT_TIMEOUT' },
  {
    name: 'refused, wrapped as fetch wraps it (the code is on the cause)',
    error: new TypeError('fetch failed', { cause: nodeError('ECONNREFUSED') }),
    code: 'CONNECTION_REFUSED',
  },
  // undici
  { name: 'undici connect timeout', error: new errors.ConnectTimeoutError(), code: 'CONNECT_TIMEOUT' },
  { name: 'undici headers timeout', error: new errors.HeadersTimeoutError(), code: 'RESPONSE_TIMEOUT' },
  { name: 'undici body timeout', error: new errors.BodyTimeoutError(), code: 'BODY_TIMEOUT' },
  {
    name: 'undici socket closed by the peer',
    error: new errors.SocketError('other side closed'),
    code: 'SOCKET_CLOSED',
  },
  { name: 'undici client closed', error: new errors.ClientClosedError(), code: 'SOCKET_CLOSED' },
  { name: 'undici head over its limit', error: new errors.HeadersOverflowError(), code: 'RESPONSE_HEADERS_TOO_LARGE' },
  {
    name: 'undici body shorter than Content-Length',
    error: new errors.ResponseContentLengthMismatchError(),
    code: 'HTTP_PROTOCOL_ERROR',
  },
  {
    name: 'undici body over maxResponseSize',
    error: new errors.ResponseExceededMaxSizeError(),
    code: 'RESPONSE_TOO_LARGE',
  },
  {
    name: 'undici request aborted (code UND_ERR_ABORTED, name AbortError)',
    error: new errors.RequestAbortedError(),
    code: 'DEADLINE_EXCEEDED',
  },
  {
    name: 'undici parser error without a code (undici 7)',
    error: new errors.HTTPParserError('Response does not match the HTTP/1.1 protocol'),
    code: 'HTTP_PROTOCOL_ERROR',
  },
  { name: 'an invalid argument to undici', error: new errors.InvalidArgumentError('bad'), code: 'HTTP_PROTOCOL_ERROR' },
  // timeouts and aborts
  {
    name: 'AbortSignal.timeout fired',
    error: new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
    code: 'DEADLINE_EXCEEDED',
  },
  {
    name: 'aborted by a signal',
    error: new DOMException('This operation was aborted', 'AbortError'),
    code: 'DEADLINE_EXCEEDED',
  },
  { name: "node's ABORT_ERR", error: nodeError('ABORT_ERR'), code: 'DEADLINE_EXCEEDED' },
  // node:http's parser (the cold mode's child)
  { name: 'node:http head overflow', error: nodeError('HPE_HEADER_OVERFLOW'), code: 'RESPONSE_HEADERS_TOO_LARGE' },
  { name: 'node:http invalid status line', error: nodeError('HPE_INVALID_CONSTANT'), code: 'HTTP_PROTOCOL_ERROR' },
  // TLS certificates
  {
    name: 'expired certificate',
    error: nodeError('CERT_HAS_EXPIRED', 'certificate has expired'),
    code: 'TLS_CERT_EXPIRED',
  },
  { name: 'certificate not yet valid', error: nodeError('CERT_NOT_YET_VALID'), code: 'TLS_CERT_EXPIRED' },
  {
    name: 'certificate for another host',
    error: nodeError('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"),
    code: 'TLS_HOSTNAME_MISMATCH',
  },
  {
    name: 'self-signed certificate',
    error: nodeError('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'),
    code: 'TLS_CERT_UNTRUSTED',
  },
  {
    name: 'self-signed certificate in the chain',
    error: nodeError('SELF_SIGNED_CERT_IN_CHAIN'),
    code: 'TLS_CERT_UNTRUSTED',
  },
  { name: 'unknown issuer', error: nodeError('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), code: 'TLS_CERT_UNTRUSTED' },
  {
    name: 'issuer not installed locally',
    error: nodeError('UNABLE_TO_GET_ISSUER_CERT_LOCALLY'),
    code: 'TLS_CERT_UNTRUSTED',
  },
  {
    name: 'certificate error inside our connect error (the cause carries the code)',
    error: new ConnectError('tls failed', 'ETLS', 'tls', { cause: nodeError('CERT_HAS_EXPIRED') }),
    code: 'TLS_CERT_EXPIRED',
  },
  // TLS versions and handshakes
  {
    name: 'server refuses the version',
    error: nodeError('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION'),
    code: 'TLS_VERSION_UNSUPPORTED',
  },
  {
    name: 'no protocol both sides allow',
    error: nodeError('ERR_SSL_NO_PROTOCOLS_AVAILABLE'),
    code: 'TLS_VERSION_UNSUPPORTED',
  },
  { name: 'unsupported protocol', error: nodeError('ERR_SSL_UNSUPPORTED_PROTOCOL'), code: 'TLS_VERSION_UNSUPPORTED' },
  {
    name: 'an answer that is not TLS (https:// to an HTTP port) is a failed handshake, not a version question',
    error: nodeError('ERR_SSL_WRONG_VERSION_NUMBER'),
    code: 'TLS_HANDSHAKE_FAILED',
  },
  {
    name: 'any other OpenSSL error',
    error: nodeError('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE'),
    code: 'TLS_HANDSHAKE_FAILED',
  },
  {
    name: 'reset during the handshake (no alert)',
    error: new ConnectError('reset', 'ECONNRESET', 'tls'),
    code: 'TLS_HANDSHAKE_RESET',
  },
  {
    name: 'closed during the handshake (no alert)',
    error: new ConnectError('closed', 'EPIPE', 'tls'),
    code: 'TLS_HANDSHAKE_RESET',
  },
  {
    name: 'a reset while connecting, not in the handshake, stays a reset',
    error: new ConnectError('reset', 'ECONNRESET', 'connect'),
    code: 'CONNECTION_RESET',
  },
  {
    name: 'a handshake failure with a code nobody maps',
    error: new ConnectError('tls failed', 'ESOMETHING', 'tls'),
    code: 'TLS_HANDSHAKE_FAILED',
  },
  // HTTP/2 and our hand-driven exchanges
  { name: 'GOAWAY with an error code', error: nodeError('ERR_HTTP2_SESSION_ERROR'), code: 'HTTP2_GOAWAY' },
  { name: 'stream reset by the peer', error: nodeError('ERR_HTTP2_STREAM_ERROR'), code: 'HTTP2_STREAM_RESET' },
  { name: 'any other node:http2 error', error: nodeError('ERR_HTTP2_INVALID_SESSION'), code: 'HTTP2_ERROR' },
  { name: 'wire: closed', error: nodeError('EWIRE_CLOSED'), code: 'SOCKET_CLOSED' },
  { name: 'wire: no head in time', error: nodeError('EWIRE_TIMEOUT'), code: 'RESPONSE_TIMEOUT' },
  { name: 'wire: body too slow', error: nodeError('EWIRE_BODY_TIMEOUT'), code: 'BODY_TIMEOUT' },
  { name: 'wire: malformed', error: nodeError('EWIRE_MALFORMED'), code: 'HTTP_PROTOCOL_ERROR' },
  { name: 'wire: head too large', error: nodeError('EWIRE_HEAD_TOO_LARGE'), code: 'RESPONSE_HEADERS_TOO_LARGE' },
  { name: 'wire: body too large', error: nodeError('EWIRE_TOO_LARGE'), code: 'RESPONSE_TOO_LARGE' },
  // ours
  {
    name: 'the target policy refused the address',
    error: nodeError('TARGET_REFUSED_BY_POLICY'),
    code: 'TARGET_REFUSED_BY_POLICY',
  },
  { name: 'a body the probe cannot use', error: nodeError('UNEXPECTED_BODY'), code: 'UNEXPECTED_BODY' },
  // anything else is a bug
  { name: 'a plain Error', error: new Error('boom'), code: 'INTERNAL_ERROR' },
  { name: 'a thrown string', error: 'boom', code: 'INTERNAL_ERROR' },
  { name: 'an unknown code', error: nodeError('EWHATEVER'), code: 'INTERNAL_ERROR' },
  { name: 'undefined', error: undefined, code: 'INTERNAL_ERROR' },
];

for (const { name, error, code } of cases) {
  test(`classifyError: ${name} → ${code}`, () => {
    const classified = classifyError(error);
    assert.equal(classified.code, code);
    assert.equal(classified.message, error instanceof Error ? error.message : String(error));
  });
}

test('classifyError: the first mapped code along the cause chain wins, however deep the wrappers', () => {
  let wrapped: Error = nodeError('ECONNREFUSED');
  for (let i = 0; i < 10; i++) wrapped = new Error(`wrapper ${i}`, { cause: wrapped });
  assert.equal(classifyError(wrapped).code, 'CONNECTION_REFUSED');
  assert.equal(
    classifyError(Object.assign(new Error('outer'), { code: 'ECONNRESET', cause: nodeError('ECONNREFUSED') })).code,
    'CONNECTION_RESET',
  );
});

test('classifyError: a cause chain that leads back to itself ends', () => {
  const first = new Error('first');
  const second = new Error('second', { cause: first });
  Object.assign(first, { cause: second });
  assert.equal(classifyError(first).code, 'INTERNAL_ERROR');
});

// node:dns's resolver (c-ares), for the dns probe: an outcome in DNS's terms, DNS_FAILED unless it is an answer.
const dnsCases: [string, string | undefined][] = [
  ['ENODATA', 'nodata'],
  ['ENOTFOUND', 'nxdomain'],
  ['ESERVFAIL', 'servfail'],
  ['EREFUSED', 'refused'],
  ['ENOTIMP', 'refused'],
  ['ETIMEOUT', 'timeout'],
  ['ECONNREFUSED', 'unreachable'],
  ['EBADRESP', 'bad-response'],
  ['EFORMERR', 'bad-response'],
  ['EWHATEVER', 'other'],
];
for (const [code, outcome] of dnsCases) {
  test(`classifyDnsError: ${code} → ${outcome}`, () => {
    const classified = classifyDnsError(nodeError(code, `queryA ${code} api.example`));
    assert.equal(classified.outcome, outcome);
    if (outcome === 'nodata') assert.equal(classified.error, undefined, 'an answer without records is no failure');
    else assert.deepEqual(classified.error, { code: 'DNS_FAILED', message: `${outcome}: queryA ${code} api.example` });
  });
}
