// The reuse probe's finding rule (worker/probes/reuse-findings.ts) as a table: one job's samples
// in, the finding out or none. The cases start from a server that keeps the connection alive.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RequestSample } from '../../contracts/common.js';
import { applyRules } from '../../contracts/findings.js';
import {
  REUSE_RULES,
  type ReuseFindingInput,
  serverClosesEveryConnection,
} from '../../worker/probes/reuse-findings.js';
import { type RuleCase, testRules } from '../helpers/finding-rules.js';

const where = { region: 'local', target: 'api', probe: 'reuse' };

const sample = (seq: number, changes: Partial<RequestSample> = {}): RequestSample => ({
  seq,
  status: 200,
  newConnection: seq === 0,
  phases: { total: 1 },
  bodyBytes: 100,
  ...changes,
});
/** Every answer said Connection: close, and every request opened a connection. */
const closing = (n: number) =>
  Array.from({ length: n }, (_, seq) => sample(seq, { newConnection: true, serverClosed: true }));

const input = (changes: Partial<ReuseFindingInput> = {}): ReuseFindingInput => ({
  mode: 'reused',
  samples: [0, 1, 2, 3].map((seq) => sample(seq)),
  connectionsOpened: 1,
  ...changes,
});

const cases: RuleCase<ReuseFindingInput>[] = [
  {
    name: 'every answer closed the connection it was asked to keep',
    rule: serverClosesEveryConnection,
    input: input({ samples: closing(4), connectionsOpened: 4 }),
    expected: {
      code: 'SERVER_CLOSES_EVERY_CONNECTION',
      evidence:
        /^asked to keep one connection alive, 4 requests opened 4 connections; 4 of 4 responses said Connection: close$/,
      data: { requests: 4, connectionsOpened: 4, responsesWithClose: 4 },
    },
  },
  {
    name: 'in new mode the client closes them itself',
    rule: serverClosesEveryConnection,
    input: input({ mode: 'new', samples: closing(4), connectionsOpened: 4 }),
  },
  {
    name: 'one answer kept the connection',
    rule: serverClosesEveryConnection,
    input: input({
      samples: [...closing(3), sample(3, { newConnection: false, serverClosed: false })],
      connectionsOpened: 3,
    }),
  },
  {
    name: 'one answered request says nothing about reuse',
    rule: serverClosesEveryConnection,
    input: input({ samples: closing(1), connectionsOpened: 1 }),
  },
];

testRules('REUSE_RULES', REUSE_RULES, cases, where);

test('a server that keeps the connection alive: no rule fires', () => {
  assert.deepEqual(applyRules(REUSE_RULES, input(), where), []);
});
