// Fidelity: on emulated regions with real round-trip times, probefleet's numbers are the round
// trips a connection costs. Three regions reach the lab on the target host: `base` with no added
// delay (the CPU time of connections and handshakes on this machine), `near` (+20 ms RTT) and
// `far` (+60 ms). Every figure must be base + k x RTT within ±10 % or ±3 ms, whichever is larger.
// curl -w in the same namespaces is the second opinion.
//
// To add a probe's rows (TLS 1.2 via the tls probe, bandwidth via compression): add its
// experiment to FIDELITY_PLAN and one line per figure to EXPECTATIONS.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test, type TestContext } from 'node:test';
import { createLogger } from '../../common/log.js';
import { median } from '../../common/stats.js';
import type { Phase } from '../../contracts/common.js';
import type { ResultOf, RunReport } from '../../contracts/result.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { runPlanInRegions } from '../../regions/fleet-run.js';
import { startRegions, type Regions } from '../../regions/harness.js';
import { startTargetLab, type TargetLab } from '../../regions/target-lab.js';
import { regionsSkipReason } from '../helpers/regions.js';

const REGIONS = [
  { name: 'base', rttMs: 0 },
  { name: 'near', rttMs: 20 },
  { name: 'far', rttMs: 60 },
];
const DELAYED = REGIONS.filter((r) => r.rttMs > 0);
const REQUESTS = 20;

const FIDELITY_PLAN = (lab: TargetLab) => `
name: fidelity
targets:
  - name: http
    url: ${lab.servers.keepalive}/
  - name: https
    url: ${lab.servers.https}/
    tls: { ca: ${lab.caFile} }
experiments:
  - probe: reuse
    requests: ${REQUESTS}
    modes: [reused, new]
`;

type Measure = (report: RunReport, region: string) => number | undefined;

function reuseResult(report: RunReport, region: string, target: string, mode: 'reused' | 'new'): ResultOf<'reuse'> {
  const found = report.results.find((r) => r.probe === 'reuse' && r.region === region && r.target === target && r.variant.mode === mode);
  assert.ok(found, `no reuse ${mode} result for ${target} from ${region}`);
  assert.equal(found.ok, true, `${target} ${mode} from ${region}: ${JSON.stringify(found.error)}`);
  return found as ResultOf<'reuse'>;
}

const phaseP50 =
  (target: string, mode: 'reused' | 'new', phase: Phase): Measure =>
  (report, region) =>
    reuseResult(report, region, target, mode).summary.phases[phase]?.p50;

const newConnectionCost =
  (target: string): Measure =>
  (report, region) =>
    report.comparisons.find((c) => c.region === region && c.target === target)?.newConnectionCostMs.median;

/** What each figure should be: the base region's figure plus `rtts` round trips. The lab offers
 * TLS 1.2 and 1.3 and Node negotiates 1.3 (one round trip; 1.2 would take two). */
const EXPECTATIONS: { what: string; rtts: number; measure: Measure }[] = [
  { what: 'TCP connect', rtts: 1, measure: phaseP50('http', 'new', 'connect') },
  { what: 'TLS 1.3 handshake', rtts: 1, measure: phaseP50('https', 'new', 'tls') },
  { what: 'a reused request over http', rtts: 1, measure: phaseP50('http', 'reused', 'total') },
  { what: 'a reused request over https', rtts: 1, measure: phaseP50('https', 'reused', 'total') },
  { what: 'new-connection cost over http', rtts: 1, measure: newConnectionCost('http') },
  { what: 'new-connection cost over https (TLS 1.3)', rtts: 2, measure: newConnectionCost('https') },
];

/** base + rtts x RTT, within ±10 % or ±3 ms, whichever is larger. The figures go to the test
 * log either way (node:test diagnostics), so a passing run shows its margins too. */
function assertRoundTrips(t: TestContext, measured: number | undefined, base: number | undefined, rtts: number, rttMs: number, what: string): void {
  assert.ok(measured !== undefined && base !== undefined, `${what}: not measured (${measured}, base ${base})`);
  const expected = base + rtts * rttMs;
  const tolerance = Math.max(0.1 * expected, 3);
  const figures =
    `${what}: measured ${measured.toFixed(2)} ms, expected ${expected.toFixed(2)} ms ` +
    `(${base.toFixed(2)} ms without delay + ${rtts} x ${rttMs} ms) ± ${tolerance.toFixed(2)} ms`;
  t.diagnostic(figures);
  assert.ok(Math.abs(measured - expected) <= tolerance, figures);
}

/** Echo server on this machine's loopback: what a region reaches through a forwarded port. */
async function startEcho(): Promise<net.Server> {
  const server = net.createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

// Round trips over one connection to 127.0.0.1:PORT, run inside a region; prints the median in ms.
const ECHO_ROUND_TRIPS = `
const net = require('node:net');
const socket = net.connect({ host: '127.0.0.1', port: Number(process.argv[1]), noDelay: true }, async () => {
  const times = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await new Promise((resolve) => { socket.once('data', resolve); socket.write('x'); });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(times[10]);
  socket.destroy();
});`;

const skip = regionsSkipReason();

describe('emulated regions: measured times are the added round trips', { skip }, () => {
  const log = createLogger('test', 'warn');
  let echo: net.Server;
  let regions: Regions;
  let lab: TargetLab;
  let report: RunReport;

  before(async () => {
    echo = await startEcho();
    regions = await startRegions({ regions: REGIONS, forwardPorts: [(echo.address() as net.AddressInfo).port], log });
    lab = await startTargetLab(regions);
    report = await runPlanInRegions(regions, await parsePlan(FIDELITY_PLAN(lab), 'fidelity.yaml'), { runId: 'fidelity-test', log });
  });

  after(async () => {
    await lab?.close();
    await regions?.close();
    echo?.close();
  });

  for (const { what, rtts, measure } of EXPECTATIONS) {
    test(`${what} ≈ ${rtts} RTT`, (t) => {
      for (const { name, rttMs } of DELAYED) {
        assertRoundTrips(t, measure(report, name), measure(report, 'base'), rtts, rttMs, `${what} from ${name}`);
      }
    });
  }

  test('the slower region is reported slower, in the JSON and in the table', () => {
    for (const target of ['http', 'https']) {
      const costs = REGIONS.map(({ name }) => newConnectionCost(target)(report, name)!);
      assert.deepEqual([...costs].sort((a, b) => a - b), costs, `${target} new-connection cost base < near < far: ${costs.join(', ')}`);
    }
    // The cost table: region, target, scheme, reused median, new median, cost, CI.
    const text = renderRunReport(report);
    const costSection = text.slice(text.indexOf('New-connection cost'));
    for (const target of ['http', 'https']) {
      const shown = REGIONS.map(({ name }) => {
        const row = costSection.split('\n').find((line) => new RegExp(`^\\s+${name}\\s+${target}\\s`).test(line));
        assert.ok(row, `no ${name} ${target} row in:\n${costSection}`);
        return Number(row.trim().split(/\s{2,}/)[5].replace(/[ ,]|ms/g, ''));
      });
      assert.deepEqual([...shown].sort((a, b) => a - b), shown, `${target} costs in the table, base < near < far: ${shown.join(', ')}`);
    }
  });

  test('curl -w in the same namespaces agrees: connect, TLS 1.3 and a reused request ≈ 1 RTT each', async (t) => {
    const url = `${lab.servers.https}/`;
    const timings = async (namespace: string) => {
      const runs: number[][] = [];
      for (let i = 0; i < 5; i++) {
        // Two URLs: the second transfer reuses the connection; -w prints a line per transfer.
        const out = await regions.exec(
          namespace,
          'curl',
          ['-sS', '--tlsv1.3', '--cacert', lab.caFile, '-o', '/dev/null', '-o', '/dev/null', '-w', '%{time_connect} %{time_appconnect} %{time_starttransfer}\n', url, url],
          { realtime: true },
        );
        const [first, second] = out.trim().split('\n').map((line) => line.split(' ').map((s) => Number(s) * 1000));
        runs.push([first[0], first[1] - first[0], second[2]]);
      }
      return [0, 1, 2].map((i) => median(runs.map((r) => r[i])));
    };
    const base = await timings(regions.region('base').namespace);
    for (const { name, rttMs } of DELAYED) {
      const [connect, tls, reused] = await timings(regions.region(name).namespace);
      assertRoundTrips(t, connect, base[0], 1, rttMs, `curl time_connect from ${name}`);
      assertRoundTrips(t, tls, base[1], 1, rttMs, `curl TLS 1.3 handshake (time_appconnect - time_connect) from ${name}`);
      assertRoundTrips(t, reused, base[2], 1, rttMs, `curl reused request (second transfer's time_starttransfer) from ${name}`);
    }
  });

  test('forwarded ports of this machine answer in every region without the added delay', async () => {
    const port = (echo.address() as net.AddressInfo).port;
    for (const { name, namespace, rttMs } of regions.regions) {
      const roundTrip = Number(await regions.exec(namespace, process.execPath, ['-e', ECHO_ROUND_TRIPS, String(port)], { realtime: true }));
      // Through two local relays: a fraction of a millisecond, never the region's RTT.
      assert.ok(roundTrip < Math.max(5, rttMs / 4), `echo round trip from ${name} (RTT ${rttMs} ms) took ${roundTrip} ms`);
    }
  });
});
