// Dual-stack regions: every region reaches the target host at 10.77.0.1 over IPv4 and at fd77::1
// over IPv6, each family over a link of its own with its own RTT. From a region with an RTT of
// 10 ms and an IPv6 RTT of 30 ms, and from one with 20 ms for both, curl's time_connect to the
// lab's keep-alive server at each address is that family's RTT within ±1 ms (the regions' usual
// bound: the path's fixed costs are 0.2-0.6 ms). probefleet (a plan with both URLs, run in the
// regions: the IPv6 target passes the region runner's target policy) shows the same: its IPv6
// connect minus its IPv4 connect is the difference of the RTTs within ±1 ms (its own fixed costs,
// 0.3-0.8 ms over the RTT under load, cancel out), and each is at most 3 ms over its RTT (the
// fidelity tests' bound). Every lab server answers at both addresses, the DNS server over UDP too. All of it with each delay mechanism the kernel has:
// the NFQUEUE helper always, netem where the kernel has it (skipped with a message elsewhere). A
// measurement the machine disturbed is made once more (measuredTwice, helpers/regions.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { createLogger } from '../../common/log.js';
import { median } from '../../common/stats.js';
import { LAB_DNS_ZONE } from '../../contracts/lab-roles.js';
import type { ResultOf, RunReport } from '../../contracts/result.js';
import type { LoadedPlan } from '../../coordinator/loaded-plan.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { runPlanInRegions } from '../../regions/fleet-run.js';
import {
  startRegions,
  TARGET_ADDRESS,
  TARGET_ADDRESS_V6,
  type DelayMechanism,
  type RegionSpec,
  type Regions,
} from '../../regions/harness.js';
import { RegionsUnavailableError } from '../../regions/preflight.js';
import { startTargetLab, type TargetLab } from '../../regions/target-lab.js';
import { needs } from '../helpers/dnsmasq.js';
import { runAlone } from '../helpers/exclusive.js';
import { curlConnects, measuredTwice, regionsSkipReason } from '../helpers/regions.js';

// Measures at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

const log = createLogger('test', 'silent');
const REGIONS: RegionSpec[] = [
  { name: 'split', rttMs: 10, ipv6RttMs: 30 },
  { name: 'same', rttMs: 20 },
];
const FAMILIES = [
  { family: 'IPv4', rttOf: (r: RegionSpec) => r.rttMs, target: 'v4' },
  { family: 'IPv6', rttOf: (r: RegionSpec) => r.ipv6RttMs ?? r.rttMs, target: 'v6' },
] as const;
/** Connects per region and family, in one curl process (a median of them is compared). */
const CONNECTS = 15;
/** How far a connect's median may be from its family's RTT (the regions' usual bound). */
const TOLERANCE_MS = 1;
const CURL_BOUNDS = { connectTimeoutSeconds: 10, timeoutMs: 60_000 };

/** measured = expected ± TOLERANCE_MS; the figures go to the test log either way. */
function assertWithin(t: TestContext, measured: number, expectedMs: number, what: string): void {
  const figures = `${what}: measured ${measured.toFixed(2)} ms, expected ${expectedMs} ms ± ${TOLERANCE_MS} ms`;
  t.diagnostic(figures);
  assert.ok(Math.abs(measured - expectedMs) <= TOLERANCE_MS, figures);
}

/** Every lab server's port from a region, at both addresses: 'open', or the connect's error code
 * (a node one-liner in the region's namespace, all connects at once). */
async function labPortsFrom(regions: Regions, region: string, lab: TargetLab) {
  const ports = Object.fromEntries(Object.entries(lab.address.ports));
  const script = `
const net = require('node:net');
const ports = ${JSON.stringify(ports)};
const connect = (host, port) => new Promise((resolve) => {
  const socket = net.connect({ host, port, timeout: 10000 });
  socket.once('connect', () => { socket.destroy(); resolve('open'); });
  socket.once('timeout', () => { socket.destroy(); resolve('timeout'); });
  socket.once('error', (err) => resolve(err.code));
});
Promise.all(Object.entries(ports).flatMap(([name, port]) =>
  ${JSON.stringify([TARGET_ADDRESS, TARGET_ADDRESS_V6])}.map(async (host) => [name, host, await connect(host, port)]),
)).then((rows) => console.log(JSON.stringify(rows)));
`;
  const out = await regions.exec(regions.region(region).namespace, process.execPath, ['-e', script]);
  return JSON.parse(out) as [string, string, string][];
}

for (const delay of ['nfqueue', 'netem'] as const satisfies readonly DelayMechanism[]) {
  describe(`dual-stack emulated regions, delay by ${delay}`, { skip: regionsSkipReason() }, () => {
    let regions: Regions | undefined;
    let lab: TargetLab;
    let loaded: LoadedPlan;
    let report: RunReport;
    /** Why this mechanism cannot be tested here (a kernel without netem). */
    let unavailable: string | undefined;

    before(async () => {
      try {
        regions = await startRegions({ regions: REGIONS, delay, log });
      } catch (err) {
        if (delay !== 'nfqueue' && err instanceof RegionsUnavailableError) {
          unavailable = err.message;
          return;
        }
        throw err;
      }
      lab = await startTargetLab(regions);
      loaded = await parsePlan(
        `name: regions-dual-stack
targets:
  - { name: v4, url: "${lab.servers.keepalive}/" }
  - { name: v6, url: "${lab.serversV6.keepalive}/" }
experiments: [{ probe: reuse, requests: ${CONNECTS}, modes: [new] }]
`,
        'regions-dual-stack.yaml',
      );
      report = await runPlanInRegions(regions, loaded, { runId: `regions-dual-stack-${delay}`, log });
    });

    after(async () => {
      await lab?.close();
      await regions?.close();
    });

    test("curl's time_connect over IPv4 and over IPv6 is each family's RTT within ±1 ms", async (t) => {
      // A kernel without netem: said, not failed (nfqueue, the default, is never skipped).
      if (unavailable) return t.skip(unavailable);
      assert.equal(regions!.delay, delay);
      assert.equal(lab.serversV6.keepalive, `http://[${TARGET_ADDRESS_V6}]:${lab.address.ports.keepalive}`);
      for (const region of REGIONS) {
        const medians: number[] = [];
        for (const { family, rttOf } of FAMILIES) {
          const url = `${(family === 'IPv4' ? lab.servers : lab.serversV6).keepalive}/`;
          await measuredTwice(t, async () => {
            const connects = await curlConnects(regions!, region.name, url, CONNECTS, CURL_BOUNDS);
            assert.equal(connects.length, CONNECTS, `${region.name} ${family}: ${connects.length} connects`);
            const measured = median(connects);
            assertWithin(t, measured, rttOf(region), `curl time_connect from ${region.name} over ${family} (${url})`);
            // A connect never beats its round trip: the delay is a floor, on each link.
            assert.ok(
              Math.min(...connects) >= rttOf(region),
              `${region.name} ${family}: a connect took ${Math.min(...connects).toFixed(2)} ms, under the RTT`,
            );
            medians.push(measured);
          });
        }
        t.diagnostic(
          `${region.name}: IPv6 - IPv4 = ${(medians[1] - medians[0]).toFixed(2)} ms (RTTs ${region.rttMs} / ${region.ipv6RttMs ?? region.rttMs} ms)`,
        );
      }
    });

    test("probefleet's connect phase: IPv6 minus IPv4 is the difference of the RTTs within ±1 ms", async (t) => {
      // A kernel without netem: said, not failed (nfqueue, the default, is never skipped).
      if (unavailable) return t.skip(unavailable);
      await measuredTwice(t, async (again) => {
        const measuredIn = again
          ? await runPlanInRegions(regions!, loaded, { runId: `regions-dual-stack-${delay}-again`, log })
          : report;
        for (const region of REGIONS) {
          const [v4, v6] = FAMILIES.map(({ family, rttOf, target }) => {
            const result = measuredIn.results.find(
              (r): r is ResultOf<'reuse'> => r.probe === 'reuse' && r.region === region.name && r.target === target,
            );
            assert.ok(result?.ok, `${region.name} ${family}: ${JSON.stringify(result?.error)}`);
            const connects = result.details!.samples.filter((s) => s.newConnection).map((s) => s.phases.connect!);
            assert.equal(connects.length, CONNECTS);
            const measured = median(connects);
            const figures = `probefleet connect from ${region.name} over ${family}: ${measured.toFixed(2)} ms for an RTT of ${rttOf(region)} ms (at most 3 ms over)`;
            t.diagnostic(figures);
            assert.ok(measured >= rttOf(region) && measured <= rttOf(region) + 3, figures);
            return measured;
          });
          const [rttV4, rttV6] = FAMILIES.map(({ rttOf }) => rttOf(region));
          assertWithin(t, v6 - v4, rttV6 - rttV4, `probefleet from ${region.name}: IPv6 connect - IPv4 connect`);
        }
      });
    });

    test('every lab server answers at both addresses (the refused one refuses at both)', async (t) => {
      // A kernel without netem: said, not failed (nfqueue, the default, is never skipped).
      if (unavailable) return t.skip(unavailable);
      const { namespace } = regions!.region('same');
      const rows = await labPortsFrom(regions!, 'same', lab);
      assert.equal(rows.length, 2 * Object.keys(lab.address.ports).length);
      for (const [name, host, outcome] of rows)
        assert.equal(outcome, name === 'refused' ? 'ECONNREFUSED' : 'open', `lab server ${name} at ${host}`);
      // Its certificate names the IPv6 address too: curl verifies it against the lab CA.
      const code = await regions!.exec(namespace, 'curl', [
        '-sS',
        '--cacert',
        lab.caFile,
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `${lab.serversV6.https}/`,
      ]);
      assert.equal(code, '200');
    });

    test("the lab's DNS server answers over UDP and TCP at both addresses", needs('dig', 'dnsutils'), async (t) => {
      // A kernel without netem: said, not failed (nfqueue, the default, is never skipped).
      if (unavailable) return t.skip(unavailable);
      // dig takes an answer only from the address it asked: a UDP socket on `::` would answer from
      // the address of the link back to the region instead.
      for (const host of [TARGET_ADDRESS, TARGET_ADDRESS_V6]) {
        for (const transport of ['+notcp', '+tcp']) {
          const answer = await regions!.exec(regions!.region('same').namespace, 'dig', [
            '+short',
            '+time=5',
            '+tries=1',
            transport,
            `@${host}`,
            '-p',
            String(lab.address.ports.dns),
            LAB_DNS_ZONE,
            'AAAA',
          ]);
          assert.equal(answer.trim(), '::1', `lab DNS at ${host} (${transport})`);
        }
      }
    });
  });
}
