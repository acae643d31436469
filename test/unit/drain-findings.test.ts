// The drain probe's finding rule (worker/probes/drain-findings.ts) as a table: one job's samples
// and counts in, the finding out or none. The cases start from 20 bodies of 60,000 B read whole on
// one connection.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyRules } from '../../contracts/findings.js';
import type { DrainSample } from '../../contracts/probes/drain.js';
import { DRAIN_RULES, type DrainFindingInput, unreadBodyBreaksReuse } from '../../worker/probes/drain-findings.js';
import { type RuleCase, testRules } from '../helpers/finding-rules.js';

const where = { region: 'local', target: 'big', probe: 'drain' };

const sample = (seq: number, body: Partial<DrainSample['body']> = {}): DrainSample => ({
  seq,
  status: 200,
  newConnection: seq === 0,
  phases: { total: 1 },
  bodyBytes: 60_000,
  body: { outcome: 'read-to-end', contentLength: 60_000, ...body },
});
const samples = (n: number, body: Partial<DrainSample['body']> = {}) =>
  Array.from({ length: n }, (_, seq) => sample(seq, body));

const input = (changes: Partial<DrainFindingInput> = {}): DrainFindingInput => ({
  mode: 'full',
  client: 'go-before-1.27',
  drainMaxBytes: 262_144,
  drainMaxMs: 50,
  samples: samples(20),
  connectionsOpened: 1,
  extraConnections: 0,
  ...changes,
});

const cases: RuleCase<DrainFindingInput>[] = [
  {
    name: 'every body closed unread cost a connection',
    rule: unreadBodyBreaksReuse,
    input: input({
      mode: 'unread',
      samples: samples(20, { outcome: 'closed-early' }),
      connectionsOpened: 20,
      extraConnections: 19,
    }),
    expected: {
      code: 'UNREAD_BODY_BREAKS_REUSE',
      evidence:
        /^go-before-1\.27: 20 requests, bodies of 60,000 B closed unread: 20 connections opened, 19 of them after a body closed before its end$/,
      data: {
        mode: 'unread',
        client: 'go-before-1.27',
        requests: 20,
        connectionsOpened: 20,
        extraConnections: 19,
        contentLength: 60_000,
      },
    },
  },
  {
    name: 'a drain over its byte cap, with the caps in the evidence',
    rule: unreadBodyBreaksReuse,
    input: input({
      mode: 'drain',
      client: 'undici',
      drainMaxBytes: 1_000,
      samples: samples(20, { outcome: 'closed-early', capHit: 'bytes' }),
      connectionsOpened: 20,
      extraConnections: 19,
    }),
    expected: {
      code: 'UNREAD_BODY_BREAKS_REUSE',
      evidence:
        /^undici: .* drained within the cap: .* \(cap 1,000 B \/ 50 ms: 20 over the byte cap, 0 still arriving at the time cap\)$/,
      data: {
        mode: 'drain',
        client: 'undici',
        requests: 20,
        connectionsOpened: 20,
        extraConnections: 19,
        contentLength: 60_000,
      },
    },
  },
  {
    name: 'one stray drain timeout in 20 requests is no diagnosis',
    rule: unreadBodyBreaksReuse,
    input: input({ mode: 'drain', connectionsOpened: 2, extraConnections: 1 }),
  },
  { name: 'bodies read whole, one connection', rule: unreadBodyBreaksReuse, input: input() },
];

testRules('DRAIN_RULES', DRAIN_RULES, cases, where);

test('bodies read to the end: no rule fires', () => {
  assert.deepEqual(applyRules(DRAIN_RULES, input(), where), []);
});
