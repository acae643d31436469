// SLOW_NAME_RESOLUTION and TARGET_ADDRESSES_CHANGE (coordinator/analysis-resolution.ts), the run
// analysis's rules on how a job's connections resolved the target's name, as a table. The lookups
// themselves, against the lab's DNS server and dnsmasq, are in test/integration/target-dns.test.ts.
import { describe } from 'node:test';
import type { ProbeResult, Resolution } from '../../contracts/result.js';
import { addressesChanged, slowResolution } from '../../coordinator/analysis-resolution.js';
import { testRules, type RuleCase } from '../helpers/finding-rules.js';
import { probeResult } from '../helpers/results.js';

/** A reuse job (new connections) whose lookups took `resolveMs` (median), with `resolution` over the defaults. */
function resolved(resolveMs: number | undefined, resolution: Partial<Resolution> | null = {}): ProbeResult {
  return probeResult({
    probe: 'reuse',
    variant: { mode: 'new', scheme: 'http' },
    summary: {
      requests: 10,
      errors: 0,
      connectionsOpened: 10,
      durationMs: 100,
      phases: resolveMs === undefined ? {} : { resolve: { p50: resolveMs, p95: resolveMs * 2, n: 10 } },
    },
    details: { samples: [] },
    ...(resolution === null
      ? {}
      : {
          resolution: {
            server: '192.0.2.53:53',
            cache: 'cold',
            ipFamily: 'any',
            lookups: 10,
            fromCache: 0,
            answers: [['192.0.2.10']],
            ...resolution,
          },
        }),
  });
}

const cases: RuleCase<ProbeResult>[] = [
  {
    name: 'cold lookups of 150 ms',
    rule: slowResolution,
    input: resolved(150),
    expected: {
      code: 'SLOW_NAME_RESOLUTION',
      evidence:
        /^resolving the name took a median 150\.0 ms \(p95 300\.0 ms\) over 10 lookups at 192\.0\.2\.53:53 \(cold\), over 100 ms/,
      data: { resolveMedianMs: 150, lookups: 10, server: '192.0.2.53:53', cache: 'cold' },
    },
  },
  { name: 'lookups of 20 ms', rule: slowResolution, input: resolved(20) },
  {
    name: 'a warm cache: no lookup during the measurement',
    rule: slowResolution,
    input: resolved(150, { lookups: 0 }),
  },
  { name: 'an IP address: nothing resolved', rule: slowResolution, input: resolved(undefined, null) },
  {
    name: 'a rotating name: two sets of addresses',
    rule: addressesChanged,
    input: resolved(2, { answers: [['192.0.2.10'], ['192.0.2.11', '192.0.2.12']] }),
    expected: {
      code: 'TARGET_ADDRESSES_CHANGE',
      evidence: /^2 different sets of addresses over 10 lookups: 192\.0\.2\.10 \| 192\.0\.2\.11, 192\.0\.2\.12$/,
      data: { answerSets: 2, lookups: 10 },
    },
  },
  { name: 'the same answer every time', rule: addressesChanged, input: resolved(2) },
];

describe('how the target resolved for its connections', () => {
  testRules('the resolution rules', [slowResolution, addressesChanged], cases, {
    region: 'lossy',
    target: 'http',
    probe: 'reuse',
  });
});
