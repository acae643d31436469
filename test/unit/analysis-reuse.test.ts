// Why a new-connection cost is not shown as one: a table of cases, each with what the report says.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { finding, type FindingCode } from '../../contracts/findings.js';
import type { RunReport } from '../../contracts/result.js';
import { noCostReason } from '../../coordinator/analysis-reuse.js';
import { costBlock, costByRegionTable } from '../../coordinator/report/run-views.js';

const where = { region: 'local', target: 't', probe: 'reuse' };
const comparison = (median: number, ci95: [number, number]) => ({
  region: 'local',
  target: 't',
  scheme: 'http' as const,
  reusedMedianMs: 10,
  newMedianMs: 10 + median,
  newConnectionCostMs: { median, ci95 },
});

const cases: {
  name: string;
  median: number;
  ci95: [number, number];
  findings: FindingCode[];
  reason: RegExp | undefined;
}[] = [
  { name: 'a cost', median: 0.6, ci95: [0.5, 0.7], findings: [], reason: undefined },
  {
    name: 'a positive median whose interval spans 0 is still a measurement',
    median: 0.2,
    ci95: [-0.1, 0.5],
    findings: [],
    reason: undefined,
  },
  {
    name: 'a median at 0 with an interval spanning it',
    median: 0,
    ci95: [-0.2, 0.3],
    findings: [],
    reason: /^no difference this run can tell: .*includes 0/,
  },
  {
    name: 'a negative median with an interval spanning 0',
    median: -0.1,
    ci95: [-0.4, 0.2],
    findings: [],
    reason: /^no difference this run can tell/,
  },
  {
    name: 'reused requests clearly slower',
    median: -5,
    ci95: [-6, -4],
    findings: [],
    reason: /^reused requests were the slower ones \(median 10\.0 ms vs 5\.00 ms new\)$/,
  },
  {
    name: 'the Nagle stall',
    median: -43,
    ci95: [-44, -42],
    findings: ['NAGLE_DELAYED_ACK_STALL'],
    reason: /: they stall \(NAGLE_DELAYED_ACK_STALL\)$/,
  },
  {
    name: 'a server closing every connection, whatever the numbers',
    median: 0.1,
    ci95: [-0.5, 0.5],
    findings: ['SERVER_CLOSES_EVERY_CONNECTION'],
    reason: /^the server closes every connection/,
  },
];

for (const c of cases) {
  test(`noCostReason: ${c.name}`, () => {
    const reason = noCostReason(
      comparison(c.median, c.ci95),
      c.findings.map((code) => finding(code, where, 'e')),
    );
    if (c.reason === undefined) assert.equal(reason, undefined);
    else assert.match(reason ?? '', c.reason);
  });
}

test("the cost's tail is shown from enough new connections to mean its share: p95 from 20, p99 from 100", () => {
  const withTail = (target: string, n: number) => ({
    ...comparison(0.6, [0.5, 0.7]),
    target,
    newConnectionCostTailMs: { p95: 1.5, p99: 9.5, n },
  });
  const block = costBlock({
    comparisons: [withTail('t', 20), withTail('u', 100), withTail('v', 10)],
  } as unknown as RunReport);
  assert.equal(block.kind, 'table');
  if (block.kind !== 'table') return;
  const tails = block.table.rows.map((row) => [row[1], row.at(-2), row.at(-1)]);
  assert.deepEqual(tails, [
    ['t', '1.50 ms', '-'],
    ['u', '1.50 ms', '9.50 ms'],
    ['v', '-', '-'],
  ]);
  assert.deepEqual(block.notes, [
    'the tail is shown from enough new connections to mean it (p95 from 20, p99 from 100); opened here: t (local) 20, v (local) 10',
  ]);
});

test('the cost per region leaves out a tail row no region has enough connections for', () => {
  const inRegion = (region: string, n: number) => ({
    ...comparison(0.6, [0.5, 0.7]),
    region,
    newConnectionCostTailMs: { p95: 1.5, p99: 9.5, n },
  });
  const report = {
    plan: { regions: ['a', 'b'] },
    comparisons: [inRegion('a', 20), inRegion('b', 40)],
  } as unknown as RunReport;
  assert.deepEqual(
    costByRegionTable(report).rows.map((row) => row.slice(2)),
    [
      ['median (95% CI)', '0.60 ms (0.50 ms .. 0.70 ms)', '0.60 ms (0.50 ms .. 0.70 ms)'],
      ['p95 to open', '1.50 ms', '1.50 ms'],
    ],
  );
});
