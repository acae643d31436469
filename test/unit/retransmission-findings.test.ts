// CONNECT_RETRANSMITTED and HANDSHAKE_RETRANSMITTED (coordinator/analysis-retransmissions.ts):
// the step rule on tables of samples, then the findings it makes from results. Real lossy links
// are in test/integration/regions-loss-fidelity.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HandshakeSample } from '../../contracts/probes/tls.js';
import type { ProbeResult } from '../../contracts/result.js';
import { applyRules } from '../../contracts/findings.js';
import { timeoutWaits } from '../../coordinator/analysis-retransmissions.js';
import { JOB_RULES } from '../../coordinator/analysis.js';
import { probeResult, requestSample } from '../helpers/results.js';

/** The job rules of the run analysis (CONNECT_RETRANSMITTED, HANDSHAKE_RETRANSMITTED), job by job. */
const retransmissionFindings = (results: ProbeResult[]) =>
  results.flatMap((r) => applyRules(JOB_RULES, r, { region: r.region, target: r.target, probe: r.probe }));

const repeat = (value: number, times: number) => Array.from({ length: times }, () => value);
/** 20 ms give or take 0.5: an ordinary connect over a 20 ms round trip. */
const steady = (times: number) => Array.from({ length: times }, (_, i) => 20 + ((i * 7) % 11) / 10 - 0.5);

describe('the step rule: samples a retransmission timeout above the rest', () => {
  const cases: { what: string; values: number[]; timeoutMs: number; waits: number[] | undefined }[] = [
    { what: 'too few samples to have a median', values: [20, 20, 1020, 20], timeoutMs: 1000, waits: undefined },
    { what: 'nothing stands out', values: steady(40), timeoutMs: 1000, waits: [] },
    { what: 'one lost SYN', values: [...repeat(20, 39), 1021], timeoutMs: 1000, waits: [1001] },
    {
      what: 'two lost SYNs in a row wait twice (linear timeouts), another stays at one',
      values: [...repeat(20, 38), 1030, 2045],
      timeoutMs: 1000,
      waits: [1010, 2025],
    },
    {
      what: 'a slow connect short of the 1 s timeout is no step',
      values: [...repeat(20, 39), 700],
      timeoutMs: 1000,
      waits: [],
    },
    {
      what: 'a lost handshake flight (RTO 200 ms + RTT) over a 43 ms handshake',
      values: [...repeat(43, 29), 268],
      timeoutMs: 200,
      waits: [225],
    },
    { what: 'a handshake 150 ms late is no timeout', values: [...repeat(43, 29), 193], timeoutMs: 200, waits: [] },
    {
      what: 'eight of thirty stepped: the spread below the median stays ordinary',
      values: [...repeat(43, 22), ...repeat(270, 7), 2563],
      timeoutMs: 200,
      waits: [...repeat(227, 7), 2520],
    },
    {
      what: "a jittery link's spread is no step (RTT 200 ms ± 100 ms)",
      values: [...Array.from({ length: 39 }, (_, i) => 100 + ((i * 37) % 200)), 420],
      timeoutMs: 200,
      waits: [],
    },
  ];
  for (const { what, values, timeoutMs, waits } of cases) {
    test(what, () => {
      const found = timeoutWaits(values, timeoutMs);
      if (waits === undefined) return assert.equal(found, undefined);
      assert.ok(found);
      assert.deepEqual(
        found.waitsMs.map((w) => Math.round(w)),
        waits,
      );
    });
  }
});

function reuse(mode: 'new' | 'reused', samples: ReturnType<typeof requestSample>[], scheme: 'http' | 'https' = 'http') {
  return probeResult({ probe: 'reuse', variant: { mode, scheme }, details: { samples } });
}

function handshakes(version: '1.2' | '1.3', samples: Partial<HandshakeSample>[]) {
  return probeResult({
    probe: 'tls',
    target: 'https',
    variant: { version },
    details: {
      tlsVersion: `TLSv${version}`,
      alpn: 'http/1.1',
      cipher: 'x',
      connectMs: null,
      handshakeMs: null,
      resumedHandshakeMs: null,
      resumptionSavingMs: null,
      resumption: null,
      certificate: null,
      certNotAfter: null,
      samples: samples.map((s, seq) => ({
        seq,
        kind: 'full',
        sessionOffered: false,
        resumed: false,
        tlsVersion: `TLSv${version}`,
        alpn: 'http/1.1',
        cipher: 'x',
        ...s,
      })),
    },
  });
}

describe('findings from results', () => {
  test('connects of a reuse job in new mode: how many waited, and what it cost', () => {
    const connects = [...steady(37), 1021.5, 1030.5, 2041.5];
    const [found, ...more] = retransmissionFindings([
      reuse(
        'new',
        connects.map((connect, seq) => requestSample(seq, { connect, total: connect + 20 })),
      ),
    ]);
    assert.deepEqual(more, []);
    assert.equal(found.code, 'CONNECT_RETRANSMITTED');
    assert.deepEqual([found.region, found.target, found.probe, found.severity], ['lossy', 'http', 'reuse', 'warning']);
    assert.deepEqual(
      { ...found.data, waitedMs: Math.round(Number(found.data.waitedMs)) },
      {
        samples: 40,
        retransmitted: 3,
        waitedMs: 4033,
        longestWaitMs: found.data.longestWaitMs,
        p50Ms: found.data.p50Ms,
        p95Ms: found.data.p95Ms,
        p99Ms: found.data.p99Ms,
      },
    );
    assert.match(
      found.evidence,
      /^3 of 40 connects waited for a retransmitted SYN: \+2\.02 s, \+1\.01 s, \+1\.00 s over the median 20\.\d+ ms \(4\.03 s in all\); p95 1,0\d\d ms, p99 1,\d{3} ms$/,
    );
  });

  test('TLS handshakes in https new mode: the handshake phase, apart from the connect', () => {
    const samples = [
      ...steady(38).map((connect, i) => ({ connect, tls: 22 + (i % 3) / 10 })),
      { connect: 20, tls: 247 },
    ];
    const found = retransmissionFindings([
      reuse(
        'new',
        samples.map((phases, seq) => requestSample(seq, phases)),
        'https',
      ),
    ]);
    assert.deepEqual(
      found.map((f) => [f.code, f.data.retransmitted]),
      [['HANDSHAKE_RETRANSMITTED', 1]],
    );
    assert.match(
      found[0].evidence,
      /^1 of 39 TLS handshakes waited for a retransmission timeout: \+0\.22 s over the median 22\.\d+ ms/,
    );
  });

  test("a step the measuring thread's own wait for a CPU could make is not blamed on the network", () => {
    const samples = [
      ...steady(38).map((connect, i) => ({ connect, tls: 22 + (i % 3) / 10 })),
      { connect: 20, tls: 247 },
    ].map((phases, seq) => requestSample(seq, phases));
    const busy = (cpuWaitMs: number) =>
      probeResult({
        probe: 'reuse',
        variant: { mode: 'new', scheme: 'https' },
        details: { samples },
        worker: { host: 'test', pid: 1, region: 'lossy', cpuWaitMs },
      });
    // The step is 225 ms over the median: a 150 ms wait for a CPU could be half of it or more.
    assert.deepEqual(retransmissionFindings([busy(150)]), []);
    assert.deepEqual(
      retransmissionFindings([busy(20)]).map((f) => f.code),
      ['HANDSHAKE_RETRANSMITTED'],
    );
  });

  test('the tls probe: full and resumed handshakes each against their own median', () => {
    // TLS 1.2: full 2 RTT (43 ms), resumed 1 RTT (22 ms); a 268 ms full one and a 250 ms resumed one waited.
    const full = [...repeat(43, 9), 268].map((tls) => ({ kind: 'full' as const, phases: { connect: 20, tls } }));
    const resumed = [...repeat(22, 9), 250].map((tls) => ({
      kind: 'resumed' as const,
      sessionOffered: true,
      resumed: true,
      phases: { connect: 20, tls },
    }));
    const [found, ...more] = retransmissionFindings([handshakes('1.2', [...full, ...resumed])]);
    assert.deepEqual(more, []);
    assert.equal(found.code, 'HANDSHAKE_RETRANSMITTED');
    assert.equal(found.data.retransmitted, 2);
    assert.equal(found.data.samples, 20);
    assert.match(found.evidence, /over the TLS 1\.2 full median 43\.0 ms, TLS 1\.2 resumed median 22\.0 ms/);
  });

  test('nothing from reused connections, failed requests, a steady link, or probes without connection samples', () => {
    const steadyConnects = steady(20).map((connect, seq) => requestSample(seq, { connect, total: connect + 20 }));
    assert.deepEqual(
      retransmissionFindings([
        reuse('new', steadyConnects),
        // One connection, then reused ones: connect applies but was skipped (0), and not a new connection.
        reuse('reused', [
          requestSample(0, { connect: 1020, total: 1040 }),
          ...repeat(0, 19).map((_, i) => requestSample(i + 1, { connect: 0, total: 20 }, { newConnection: false })),
        ]),
        // A request that failed after waiting is an error sample, not a step.
        reuse('new', [
          ...steadyConnects,
          requestSample(20, { connect: 5000 }, { error: { code: 'CONNECT_TIMEOUT', message: 'no answer' } }),
        ]),
      ]),
      [],
    );
  });
});
