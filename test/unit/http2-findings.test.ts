// The http2 probe's finding rules (worker/probes/http2-findings.ts) as a table: a job's details in,
// the finding out or none. Each case starts from a target that gets it right (https selecting h2,
// or http answering h2c both ways) and changes one thing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyRules } from '../../contracts/findings.js';
import type { H2cAttempt, H2cOutcome } from '../../contracts/probes/http2.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import {
  h2cUnsupported,
  h2NotNegotiated,
  HTTP2_RULES,
  http1OnlyManyConnections,
  serverNoAnswer,
  type Http2FindingInput,
} from '../../worker/probes/http2-findings.js';
import { type RuleCase, testRules } from '../helpers/finding-rules.js';

type Details = ProbeDetails<'http2'>;
const where = { region: 'local', target: 'site', probe: 'http2' };

const attempt = (outcome: H2cOutcome, answer: string): H2cAttempt => ({
  supported: outcome === 'http2',
  outcome,
  answer,
});
const H2C_ANSWERED = attempt('http2', 'answered HTTP/2 200');
const NO_ANSWER = attempt('no-answer', 'no answer within 300 ms');
const CLOSED = attempt('closed', 'closed the connection without an answer');
const H1_ANSWER = attempt('http1', 'answered HTTP/1.1 200, ignored the upgrade');

function details(changes: Partial<Details> = {}): Details {
  return {
    alpn: { offered: ['h2', 'http/1.1'], selected: 'h2' },
    h1HeaderBytes: { request: 80, response: 120 },
    h2HeaderBytesFirst: { request: 40, response: 30 },
    h2HeaderBytesRepeat: { request: 10, response: 8 },
    h2Requests: [],
    h2cPriorKnowledge: null,
    h2cUpgrade: null,
    multiplexing: {
      requests: 24,
      h1: { connectionsOpened: 6, totalMs: 31.25, errors: 0 },
      h2: { connectionsOpened: 1, totalMs: 12.5, errors: 0 },
    },
    errors: [],
    ...changes,
  };
}
/** An http target: no ALPN, the two h2c attempts. */
const plain = (prior: H2cAttempt, upgrade: H2cAttempt, changes: Partial<Details> = {}) =>
  details({ alpn: null, h2cPriorKnowledge: prior, h2cUpgrade: upgrade, ...changes });
const h1Timeout: Details['errors'][number] = {
  step: 'h1-headers',
  code: 'RESPONSE_TIMEOUT',
  message: 'HTTP/1.1 request: no answer within 300 ms',
};

const cases: RuleCase<Http2FindingInput>[] = [
  {
    name: 'ALPN selected http/1.1',
    rule: h2NotNegotiated,
    input: { details: details({ alpn: { offered: ['h2', 'http/1.1'], selected: 'http/1.1' } }), speaksH2: false },
    expected: {
      code: 'H2_NOT_NEGOTIATED',
      evidence: /^offered ALPN h2, http\/1\.1; the server selected http\/1\.1$/,
      data: { alpnSelected: 'http/1.1' },
    },
  },
  {
    name: 'no ALPN at all',
    rule: h2NotNegotiated,
    input: { details: details({ alpn: { offered: ['h2', 'http/1.1'], selected: null } }), speaksH2: false },
    expected: {
      code: 'H2_NOT_NEGOTIATED',
      evidence: /the server selected no protocol at all \(no ALPN\), so an HTTP\/2 client cannot start$/,
      data: { alpnSelected: 'none' },
    },
  },
  { name: 'h2 selected', rule: h2NotNegotiated, input: { details: details(), speaksH2: true } },
  {
    name: 'an http target has no ALPN to judge',
    rule: h2NotNegotiated,
    input: { details: plain(H1_ANSWER, H1_ANSWER), speaksH2: false },
  },
  {
    name: 'silence to both h2c attempts and to HTTP/1.1',
    rule: serverNoAnswer,
    input: { details: plain(NO_ANSWER, CLOSED, { errors: [h1Timeout] }), speaksH2: false },
    expected: {
      code: 'SERVER_NO_ANSWER',
      evidence:
        /^HTTP\/2 prior knowledge: no answer within 300 ms; Upgrade: h2c: closed the connection without an answer; HTTP\/1\.1: RESPONSE_TIMEOUT \(HTTP\/1\.1 request: no answer within 300 ms\)$/,
      data: { h1Error: 'RESPONSE_TIMEOUT' },
    },
  },
  {
    name: 'h2c attempts unanswered, but HTTP/1.1 answered',
    rule: serverNoAnswer,
    input: { details: plain(NO_ANSWER, NO_ANSWER), speaksH2: false },
  },
  {
    // Matched by outcome, never by the answer's words: a server's own text that reads like silence is an answer.
    name: 'an HTTP/1.1 answer whose words read like silence',
    rule: serverNoAnswer,
    input: {
      details: plain(attempt('http1', 'no answer within 300 ms'), NO_ANSWER, { errors: [h1Timeout] }),
      speaksH2: false,
    },
  },
  {
    name: 'HTTP/1.1 answers to both h2c attempts',
    rule: h2cUnsupported,
    input: {
      details: plain(attempt('http1', 'protocol error: answered "HTTP/1.1 400 Bad Request"'), H1_ANSWER),
      speaksH2: false,
    },
    expected: {
      code: 'H2C_UNSUPPORTED',
      evidence:
        /^prior knowledge: protocol error: answered "HTTP\/1\.1 400 Bad Request"; Upgrade: h2c: answered HTTP\/1\.1 200, ignored the upgrade$/,
      data: {
        priorKnowledge: 'protocol error: answered "HTTP/1.1 400 Bad Request"',
        upgrade: 'answered HTTP/1.1 200, ignored the upgrade',
      },
    },
  },
  {
    name: 'prior knowledge answered in HTTP/2',
    rule: h2cUnsupported,
    input: { details: plain(H2C_ANSWERED, H1_ANSWER), speaksH2: true },
  },
  {
    name: 'a server silent to everything is not asked "h2c?" (SERVER_NO_ANSWER says it)',
    rule: h2cUnsupported,
    input: { details: plain(NO_ANSWER, NO_ANSWER, { errors: [h1Timeout] }), speaksH2: false },
  },
  {
    name: 'HTTP/1.1 only, the concurrent requests on six connections',
    rule: http1OnlyManyConnections,
    input: {
      details: plain(H1_ANSWER, H1_ANSWER, { multiplexing: { ...details().multiplexing, h2: null } }),
      speaksH2: false,
    },
    expected: {
      code: 'HTTP1_ONLY_MANY_CONNECTIONS',
      evidence:
        /^24 concurrent requests over HTTP\/1\.1 opened 6 connections and took 31\.3 ms; over HTTP\/2 they would share one$/,
      data: { concurrentRequests: 24, h1Connections: 6, h1TotalMs: 31.25 },
    },
  },
  {
    name: 'a target that speaks HTTP/2',
    rule: http1OnlyManyConnections,
    input: { details: details(), speaksH2: true },
  },
  {
    name: 'the upgrade to h2c accepted',
    rule: http1OnlyManyConnections,
    input: {
      details: plain(
        H1_ANSWER,
        attempt('http2', 'answered 101 Switching Protocols, then the response as HTTP/2 on stream 1'),
      ),
      speaksH2: false,
    },
  },
  {
    name: 'one HTTP/1.1 connection was enough',
    rule: http1OnlyManyConnections,
    input: {
      details: plain(H1_ANSWER, H1_ANSWER, {
        multiplexing: { requests: 24, h1: { connectionsOpened: 1, totalMs: 50, errors: 0 }, h2: null },
      }),
      speaksH2: false,
    },
  },
  {
    name: 'HTTP/1.1 requests failed',
    rule: http1OnlyManyConnections,
    input: {
      details: plain(H1_ANSWER, H1_ANSWER, {
        multiplexing: { requests: 24, h1: { connectionsOpened: 6, totalMs: 50, errors: 3 }, h2: null },
      }),
      speaksH2: false,
    },
  },
];

testRules('HTTP2_RULES', HTTP2_RULES, cases, where);

test('targets that get it right: no rule fires', () => {
  assert.deepEqual(applyRules(HTTP2_RULES, { details: details(), speaksH2: true }, where), []);
  assert.deepEqual(applyRules(HTTP2_RULES, { details: plain(H2C_ANSWERED, H2C_ANSWERED), speaksH2: true }, where), []);
});
