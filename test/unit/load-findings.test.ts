// The load probe's finding rule (worker/probes/load-findings.ts) as a table: one job's counts in,
// the finding out or none. The cases start from 4 keep-alive connections carrying 1,000 requests,
// sent by one thread busy half the run on a 2-core worker.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyRules } from '../../contracts/findings.js';
import {
  clientSaturated,
  keepAliveLostUnderLoad,
  LOAD_RULES,
  type LoadFindingInput,
} from '../../worker/probes/load-findings.js';
import { type RuleCase, testRules } from '../helpers/finding-rules.js';

const where = { region: 'local', target: 'api', probe: 'load' };

const input = (changes: Partial<LoadFindingInput> = {}): LoadFindingInput => ({
  mode: 'reused',
  connections: 4,
  completed: 1_000,
  connectionsOpened: 4,
  eventLoopUtilization: [0.5],
  cores: 2,
  ...changes,
});

const cases: RuleCase<LoadFindingInput>[] = [
  {
    name: 'keep-alive asked for, a connection per request',
    rule: keepAliveLostUnderLoad,
    input: input({ connectionsOpened: 1_000 }),
    expected: {
      code: 'SERVER_CLOSES_EVERY_CONNECTION',
      evidence: /^under load with 4 keep-alive connections \(reused\), 1000 answered requests opened 1000 connections$/,
      data: { requests: 1_000, connectionsOpened: 1_000, connections: 4 },
    },
  },
  {
    name: 'over HTTP/2 too',
    rule: keepAliveLostUnderLoad,
    input: input({ mode: 'h2', connectionsOpened: 950 }),
    expected: {
      code: 'SERVER_CLOSES_EVERY_CONNECTION',
      evidence: /\(h2\), 1000 answered requests opened 950 connections$/,
      data: { requests: 1_000, connectionsOpened: 950, connections: 4 },
    },
  },
  {
    name: 'new mode asks for a connection per request',
    rule: keepAliveLostUnderLoad,
    input: input({ mode: 'new', connectionsOpened: 1_000 }),
  },
  { name: 'a few reconnects are no diagnosis', rule: keepAliveLostUnderLoad, input: input({ connectionsOpened: 800 }) },
  {
    name: 'too few requests to tell',
    rule: keepAliveLostUnderLoad,
    input: input({ completed: 7, connectionsOpened: 7 }),
  },
  {
    name: 'the one thread busy all the run, a core left',
    rule: clientSaturated,
    input: input({ eventLoopUtilization: [0.97] }),
    expected: {
      code: 'LOAD_CLIENT_SATURATED',
      evidence:
        /^the load generator was busy 97% of the run \(its thread; 2 cores\): these latencies include the client's own queueing; add threads or workers$/,
      data: { utilizationPercent: 97, threads: 1, cores: 2 },
    },
  },
  {
    name: 'one of two threads at 90%, every core used',
    rule: clientSaturated,
    input: input({ eventLoopUtilization: [0.4, 0.9] }),
    expected: {
      code: 'LOAD_CLIENT_SATURATED',
      evidence: /\(the busiest of its 2 threads; 2 cores\): .*; add workers$/,
      data: { utilizationPercent: 90, threads: 2, cores: 2 },
    },
  },
  { name: 'threads busy 89% of the run', rule: clientSaturated, input: input({ eventLoopUtilization: [0.89, 0.89] }) },
  {
    name: 'busy, but nothing answered: the failure says more',
    rule: clientSaturated,
    input: input({ eventLoopUtilization: [1], completed: 0 }),
  },
];

testRules('LOAD_RULES', LOAD_RULES, cases, where);

test('connections kept alive: no rule fires', () => {
  assert.deepEqual(applyRules(LOAD_RULES, input(), where), []);
});
