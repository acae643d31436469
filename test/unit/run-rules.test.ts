// The run analysis's rules that need several jobs (coordinator/analysis.ts, RUN_RULES) as a table:
// job results in, the findings out. NAGLE_DELAYED_ACK_STALL against the lab's real Nagle endpoint
// is in test/integration/reuse-probe.test.ts; the job rules (retransmissions) in
// retransmission-findings.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Finding, FindingCode } from '../../contracts/findings.js';
import type { ProbeResult } from '../../contracts/result.js';
import { h3Advertised } from '../../coordinator/analysis-alt-svc.js';
import { familyFails, familySlower } from '../../coordinator/analysis-resolution.js';
import { nagleStalls } from '../../coordinator/analysis-reuse.js';
import { analyzeRun, RUN_RULES } from '../../coordinator/analysis.js';
import { probeResult, requestSample } from '../helpers/results.js';

/** A reuse job of `mode` whose requests took `totals` ms (the first on a new connection when reused). */
function reuse(mode: 'reused' | 'new', totals: number[], { target = 'nagle', bodyBytes = 2 } = {}) {
  return probeResult({
    probe: 'reuse',
    target,
    variant: { mode, scheme: 'http' },
    details: {
      samples: totals.map((total, seq) =>
        requestSample(
          seq,
          { total, transfer: total * 0.95 },
          { bodyBytes, newConnection: mode === 'new' || seq === 0 },
        ),
      ),
    },
  });
}
const repeat = (value: number, times: number) => Array.from({ length: times }, () => value);
/** Reused requests at the 40 ms delayed-ACK timer, a little jitter. */
const stalled = (times: number) => Array.from({ length: times }, (_, i) => 41 + (i % 4) * 0.7);

function altSvc(probe: 'reuse' | 'drain', values: string[], target = 'h2'): ProbeResult {
  return probeResult({
    probe,
    target,
    altSvc: values,
    variant:
      probe === 'reuse' ? { mode: 'reused', scheme: 'https' } : { mode: 'full', client: 'undici', scheme: 'https' },
    details:
      probe === 'reuse'
        ? { samples: [] }
        : {
            protocol: 'http/1.1',
            drainCap: null,
            extraConnections: 0,
            http2: { checked: false, negotiated: null, note: '' },
            samples: [],
          },
  });
}

/** A reuse job (new connections) of a dual-stack target's family: its connects, or none answered. */
function family(ipFamily: 4 | 6, connects: number[] | 'failed', { variant = 'new' as 'new' | 'reused' } = {}) {
  const failed = connects === 'failed';
  const n = failed ? 0 : connects.length;
  const p50 = failed ? 0 : [...connects].sort((a, b) => a - b)[Math.floor((n - 1) / 2)];
  return probeResult({
    probe: 'reuse',
    target: `api-ipv${ipFamily}`,
    variant: { mode: variant, scheme: 'http' },
    ok: !failed,
    error: failed ? { code: 'CONNECT_TIMEOUT', message: 'TCP connect: no answer within the connect time bound' } : null,
    summary: {
      requests: 10,
      errors: failed ? 10 : 0,
      connectionsOpened: n,
      durationMs: 100,
      phases: failed ? {} : { connect: { p50, p95: Math.max(...connects), n } },
    },
    details: { samples: [] },
    resolution: { server: 'system', cache: 'cold', ipFamily, lookups: 10, fromCache: 0, answers: [] },
  });
}

interface Case {
  name: string;
  rule: (results: ProbeResult[]) => Finding[];
  results: ProbeResult[];
  /** The findings, in order: code, target, evidence and some of the data. */
  expected: { code: FindingCode; target: string; evidence: RegExp; data: Finding['data'] }[];
}

const cases: Case[] = [
  {
    name: 'reused requests at the timer, the first (fresh) one fast',
    rule: nagleStalls,
    results: [reuse('reused', [1.2, ...stalled(19)])],
    expected: [
      {
        code: 'NAGLE_DELAYED_ACK_STALL',
        target: 'nagle',
        evidence:
          /^reused requests took a median 41\.7 ms \(of which transfer 39\.6 ms\), 19 of 19 at the delayed-ACK timer \(35-220 ms\) for bodies of 2 B, against 1\.20 ms for the first request \(a fresh connection\): the body waits/,
        data: { requestsAtTimer: 19, reusedRequests: 19, bodyBytes: 2, firstRequestMs: 1.2 },
      },
    ],
  },
  {
    name: 'the new mode is the control when the first request was slow too',
    rule: nagleStalls,
    results: [reuse('reused', [42, ...stalled(19)]), reuse('new', repeat(1.5, 10))],
    expected: [
      {
        code: 'NAGLE_DELAYED_ACK_STALL',
        target: 'nagle',
        evidence: /against 1\.50 ms on new connections: the body waits/,
        data: { requestsAtTimer: 19, reusedRequests: 19, bodyBytes: 2, firstRequestMs: 42, newMedianMs: 1.5 },
      },
    ],
  },
  {
    name: 'a 40 ms endpoint is slow everywhere: no control was fast',
    rule: nagleStalls,
    results: [reuse('reused', [42, ...stalled(19)]), reuse('new', repeat(42, 10))],
    expected: [],
  },
  {
    name: 'large bodies are not the small segment Nagle holds back',
    rule: nagleStalls,
    results: [reuse('reused', [1.2, ...stalled(19)], { bodyBytes: 200_000 })],
    expected: [],
  },
  {
    name: 'fast reused requests',
    rule: nagleStalls,
    results: [reuse('reused', [1.2, ...repeat(0.3, 19)])],
    expected: [],
  },
  {
    name: 'spread between 40 and 200 ms is no timer',
    rule: nagleStalls,
    results: [reuse('reused', [1.2, ...Array.from({ length: 19 }, (_, i) => 40 + i * 9)])],
    expected: [],
  },
  {
    name: 'too few reused requests to tell',
    rule: nagleStalls,
    results: [reuse('reused', [1.2, ...stalled(2)])],
    expected: [],
  },
  {
    name: 'one finding per target',
    rule: nagleStalls,
    results: [
      reuse('reused', [1.2, ...stalled(19)], { target: 'a' }),
      reuse('reused', [1.2, ...repeat(0.3, 19)], { target: 'b' }),
      reuse('reused', [1.2, ...stalled(19)], { target: 'c' }),
    ],
    expected: ['a', 'c'].map((target) => ({
      code: 'NAGLE_DELAYED_ACK_STALL' as const,
      target,
      evidence: /the body waits for the client's delayed ACK$/,
      data: { requestsAtTimer: 19, reusedRequests: 19, bodyBytes: 2, firstRequestMs: 1.2 },
    })),
  },
  {
    name: 'HTTP/3 on the same port, seen by two probes',
    rule: h3Advertised,
    results: [altSvc('reuse', ['h3=":443"; ma=3600']), altSvc('drain', ['h3=":443"; ma=3600, h2=":443"'])],
    expected: [
      {
        code: 'H3_ADVERTISED',
        target: 'h2',
        evidence:
          /^h3 on port 443 for 3600 s \(Alt-Svc: h3=":443"; ma=3600; seen by reuse, drain\); not measured: probefleet speaks HTTP\/1\.1 and HTTP\/2/,
        data: { protocol: 'h3', port: 443, maxAgeSeconds: 3600, host: '' },
      },
    ],
  },
  {
    name: 'a draft version on another host, without ma (a day)',
    rule: h3Advertised,
    results: [altSvc('drain', ['h3-29="alt.example:8443"'])],
    expected: [
      {
        code: 'H3_ADVERTISED',
        target: 'h2',
        evidence: /^h3-29 on alt\.example:8443 for 86400 s/,
        data: { protocol: 'h3-29', port: 8443, maxAgeSeconds: 86_400, host: 'alt.example' },
      },
    ],
  },
  {
    name: 'Alt-Svc: clear, and HTTP/2 only',
    rule: h3Advertised,
    results: [altSvc('reuse', ['clear']), altSvc('drain', ['h2=":443"; ma=60'])],
    expected: [],
  },
  {
    name: 'IPv6 answers nothing, IPv4 answers',
    rule: familyFails,
    results: [family(4, repeat(20, 10)), family(6, 'failed')],
    expected: [
      {
        code: 'IP_FAMILY_FAILS',
        target: 'api-ipv6',
        evidence: /^over IPv6 no request was answered \(CONNECT_TIMEOUT: .*\), over IPv4 10 of 10 were$/,
        data: { failedFamily: 'IPv6', answered: 10 },
      },
    ],
  },
  {
    name: 'both families fail: no family to blame',
    rule: familyFails,
    results: [family(4, 'failed'), family(6, 'failed')],
    expected: [],
  },
  {
    name: 'a family of another variant is no pair',
    rule: familyFails,
    results: [family(4, repeat(20, 10)), family(6, 'failed', { variant: 'reused' })],
    expected: [],
  },
  {
    name: 'IPv6 connects 40 ms against IPv4 20 ms',
    rule: familySlower,
    results: [family(4, repeat(20, 10)), family(6, repeat(40, 10))],
    expected: [
      {
        code: 'IP_FAMILY_SLOWER',
        target: 'api-ipv6',
        evidence:
          /^IPv6 connects took a median 40\.0 ms, IPv4 20\.0 ms \(api-ipv4\): 20\.0 ms more per new connection$/,
        data: { slowFamily: 'IPv6', slowConnectMedianMs: 40, fastConnectMedianMs: 20 },
      },
    ],
  },
  {
    name: 'twice as slow on loopback is microseconds: under 5 ms more is nothing',
    rule: familySlower,
    results: [family(4, repeat(0.05, 10)), family(6, repeat(0.1, 10))],
    expected: [],
  },
  {
    name: 'one slow connect of two is no path',
    rule: familySlower,
    results: [family(4, [0.3, 0.4]), family(6, [5.4, 0.3])],
    expected: [],
  },
];

for (const { name, rule, results, expected } of cases) {
  test(`${rule.name}: ${name}`, () => {
    const found = rule(results);
    assert.equal(found.length, expected.length, JSON.stringify(found.map((f) => f.evidence)));
    found.forEach((f, i) => {
      const want = expected[i];
      assert.equal(f.code, want.code);
      assert.equal(f.target, want.target);
      assert.match(f.evidence, want.evidence);
      assert.deepEqual(Object.fromEntries(Object.keys(want.data).map((k) => [k, f.data[k]])), want.data);
    });
  });
}

test('every rule in RUN_RULES has a case that fires and one that does not', () => {
  for (const rule of RUN_RULES) {
    const mine = cases.filter((c) => c.rule === rule);
    assert.ok(mine.some((c) => c.expected.length > 0) && mine.some((c) => c.expected.length === 0), rule.name);
  }
});

test("analyzeRun: a target at a time; in each, the probes' own findings first, then each run rule's in the order of the list", () => {
  const own = (target: string) =>
    probeResult({
      probe: 'reuse',
      target,
      variant: { mode: 'reused', scheme: 'http' },
      details: { samples: [] },
      findings: [
        {
          code: 'SERVER_CLOSES_EVERY_CONNECTION',
          severity: 'warning',
          region: 'lossy',
          target,
          probe: 'reuse',
          evidence: 'x',
        },
      ],
    });
  const oneTarget = analyzeRun([
    reuse('reused', [1.2, ...stalled(19)]),
    own('nagle'),
    altSvc('drain', ['h3=":443"'], 'nagle'),
  ]);
  assert.deepEqual(
    oneTarget.findings.map((f) => f.code),
    ['SERVER_CLOSES_EVERY_CONNECTION', 'NAGLE_DELAYED_ACK_STALL', 'H3_ADVERTISED'],
  );
  // Targets in the order their first result came; a dual-stack pair is one target.
  const targets = analyzeRun([
    own('close'),
    altSvc('drain', ['h3=":443"'], 'api-ipv4'),
    reuse('reused', [1.2, ...stalled(19)]),
    own('api-ipv6'),
  ]);
  assert.deepEqual(
    targets.findings.map((f) => [f.target, f.code]),
    [
      ['close', 'SERVER_CLOSES_EVERY_CONNECTION'],
      ['api-ipv6', 'SERVER_CLOSES_EVERY_CONNECTION'],
      ['api-ipv4', 'H3_ADVERTISED'],
      ['nagle', 'NAGLE_DELAYED_ACK_STALL'],
    ],
  );
});
