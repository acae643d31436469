// The tls probe's finding rules (worker/probes/tls-findings.ts) as a table: a job's handshakes and
// details in, the finding out or none. Each case starts from a server that gets it right (every
// handshake answered, sessions resumed, a certificate with a year left) and changes one thing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProbeError } from '../../contracts/common.js';
import { applyRules } from '../../contracts/findings.js';
import type { CertificateInfo, HandshakeSample } from '../../contracts/probes/tls.js';
import {
  certExpired,
  certExpiresSoon,
  noSessionResumption,
  TLS_RULES,
  tls13Unavailable,
  type TlsFindingInput,
} from '../../worker/probes/tls-findings.js';
import { type RuleCase, testRules } from '../helpers/finding-rules.js';

const where = { region: 'local', target: 'api', probe: 'tls' };

const handshake = (seq: number, changes: Partial<HandshakeSample> = {}): HandshakeSample => ({
  seq,
  kind: seq % 2 === 1 ? 'resumed' : 'full',
  sessionOffered: seq % 2 === 1,
  resumed: seq % 2 === 1,
  phases: { connect: 0.2, tls: 2.5, total: 2.7 },
  tlsVersion: 'TLSv1.3',
  alpn: null,
  cipher: 'TLS_AES_256_GCM_SHA384',
  ...changes,
});
const refused = (seq: number, code: ProbeError['code']): HandshakeSample =>
  handshake(seq, {
    resumed: false,
    phases: { total: 1 },
    tlsVersion: null,
    cipher: null,
    error: { code, message: code },
  });

const certificate = (changes: Partial<CertificateInfo> = {}): CertificateInfo => ({
  subject: 'CN=api.example',
  issuer: 'CN=Example CA',
  notBefore: '2026-01-01T00:00:00.000Z',
  notAfter: '2027-12-01T00:00:00.000Z',
  daysLeft: 363.5,
  verifyError: null,
  ...changes,
});

function input(changes: Partial<TlsFindingInput> = {}, details: Partial<TlsFindingInput['details']> = {}) {
  return {
    version: '1.3',
    samples: [0, 1, 2, 3].map((seq) => handshake(seq)),
    certExpiryWarningDays: 21,
    sessionWaitMs: 204.4,
    ...changes,
    details: {
      certificate: certificate(),
      resumption: { attempted: 2, sessionsOffered: 2, resumed: 2 },
      ...details,
    },
  } satisfies TlsFindingInput;
}

const cases: RuleCase<TlsFindingInput>[] = [
  {
    name: 'every handshake offering only TLS 1.3 refused as an unsupported version',
    rule: tls13Unavailable,
    input: input({ samples: [0, 1, 2].map((seq) => refused(seq, 'TLS_VERSION_UNSUPPORTED')) }),
    expected: {
      code: 'TLS13_UNAVAILABLE',
      evidence: /^3 handshakes offering only TLS 1\.3 were refused \(TLS_VERSION_UNSUPPORTED\)$/,
      data: { refusedHandshakes: 3 },
    },
  },
  {
    name: 'TLS 1.2 refused is not TLS 1.3 unavailable',
    rule: tls13Unavailable,
    input: input({ version: '1.2', samples: [refused(0, 'TLS_VERSION_UNSUPPORTED')] }),
  },
  {
    name: 'one TLS 1.3 handshake answered',
    rule: tls13Unavailable,
    input: input({ samples: [refused(0, 'TLS_VERSION_UNSUPPORTED'), handshake(1)] }),
  },
  {
    name: 'TLS 1.3 handshakes failing for another reason (the connection refused)',
    rule: tls13Unavailable,
    input: input({ samples: [refused(0, 'CONNECTION_REFUSED')] }),
  },
  {
    name: 'sessions offered and none resumed',
    rule: noSessionResumption,
    input: input({}, { resumption: { attempted: 2, sessionsOffered: 2, resumed: 0 } }),
    expected: {
      code: 'NO_SESSION_RESUMPTION',
      evidence: /^offered the session of the full TLS 1\.3 handshake before it 2 times; the server resumed none$/,
      data: { tlsVersion: '1.3', attempted: 2, sessionsOffered: 2, resumed: 0 },
    },
  },
  {
    name: 'no session issued at all: nothing to offer',
    rule: noSessionResumption,
    input: input({ version: '1.2' }, { resumption: { attempted: 2, sessionsOffered: 0, resumed: 0 } }),
    expected: {
      code: 'NO_SESSION_RESUMPTION',
      evidence:
        /^the server issued no session ticket or id within 204 ms of 2 full TLS 1\.2 handshakes: nothing to resume$/,
      data: { tlsVersion: '1.2', attempted: 2, sessionsOffered: 0, resumed: 0 },
    },
  },
  {
    name: 'one of two resumed',
    rule: noSessionResumption,
    input: input({}, { resumption: { attempted: 2, sessionsOffered: 2, resumed: 1 } }),
  },
  {
    name: 'resumption not asked for',
    rule: noSessionResumption,
    input: input({}, { resumption: null }),
  },
  {
    name: 'no resumed handshake got as far as an attempt',
    rule: noSessionResumption,
    input: input({}, { resumption: { attempted: 0, sessionsOffered: 0, resumed: 0 } }),
  },
  {
    name: 'a certificate past its end date',
    rule: certExpired,
    input: input({}, { certificate: certificate({ notAfter: '2026-11-30T12:00:00.000Z', daysLeft: -2.5 }) }),
    expected: {
      code: 'CERT_EXPIRED',
      evidence: /^certificate CN=api\.example \(issuer CN=Example CA\) expired on 2026-11-30, 2 days ago$/,
      data: { notAfter: '2026-11-30T12:00:00.000Z', daysLeft: -2.5 },
    },
  },
  {
    name: 'a certificate with a year left',
    rule: certExpired,
    input: input(),
  },
  {
    name: 'a certificate whose end date is no date',
    rule: certExpired,
    input: input({}, { certificate: certificate({ notAfter: null, daysLeft: null }) }),
  },
  {
    name: 'a certificate ending within the warning days',
    rule: certExpiresSoon,
    input: input({}, { certificate: certificate({ notAfter: '2026-12-04T10:00:00.000Z', daysLeft: 1.2 }) }),
    expected: {
      code: 'CERT_EXPIRES_SOON',
      evidence:
        /^certificate CN=api\.example \(issuer CN=Example CA\) expires on 2026-12-04, in 1 day \(warning below 21 days\)$/,
      data: { notAfter: '2026-12-04T10:00:00.000Z', daysLeft: 1.2, thresholdDays: 21 },
    },
  },
  {
    name: 'an expired certificate is not "soon"',
    rule: certExpiresSoon,
    input: input({}, { certificate: certificate({ notAfter: '2026-11-30T12:00:00.000Z', daysLeft: -2.5 }) }),
  },
  {
    name: 'a certificate just past the warning days',
    rule: certExpiresSoon,
    input: input({ certExpiryWarningDays: 21 }, { certificate: certificate({ daysLeft: 21 }) }),
  },
  {
    name: 'no certificate seen (no full handshake answered)',
    rule: certExpiresSoon,
    input: input({}, { certificate: null }),
  },
];

testRules('TLS_RULES', TLS_RULES, cases, where);

test('a server that gets it right: no rule fires', () => {
  assert.deepEqual(applyRules(TLS_RULES, input(), where), []);
});
