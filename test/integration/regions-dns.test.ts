// The whole cost of a new connection, DNS + TCP + TLS, from emulated regions, with a real resolver
// on the target host: Debian's dnsmasq in the target namespace answers api.probefleet.test (A
// 10.77.0.1, AAAA fd77::1), so a cold lookup from a region is one round trip of its link. For each
// region: the `resolve` phase of a cold target's new connections is one RTT and agrees with curl's
// time_namelookup in the same namespace (glibc asking the same dnsmasq) within the regions' ±1 ms;
// a warm target's is ≈ 0; resolve, connect and TLS each cost one RTT and add up to the
// new-connection cost (median new − median reused) within the tolerance the fidelity tests use.
// With `ipFamily: both`, api-ipv4 and api-ipv6 connect in their own family's RTT, and the region
// whose IPv6 link is slower gets IP_FAMILY_SLOWER. A check the machine disturbed is made once more
// on a fresh measurement (measuredTwice, helpers/regions.ts).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { after, before, describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '../../common/log.js';
import { median } from '../../common/stats.js';
import type { ResultOf, RunReport } from '../../contracts/result.js';
import type { LoadedPlan } from '../../coordinator/loaded-plan.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { runPlanInRegions } from '../../regions/fleet-run.js';
import {
  startRegions,
  TARGET_ADDRESS,
  TARGET_ADDRESS_V6,
  type RegionSpec,
  type Regions,
} from '../../regions/harness.js';
import { startTargetLab, type TargetLab } from '../../regions/target-lab.js';
import { needs } from '../helpers/dnsmasq.js';
import { runAlone } from '../helpers/exclusive.js';
import { measuredTwice, regionsSkipReason } from '../helpers/regions.js';

// Measures at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

const log = createLogger('test', 'silent');
const REGIONS: RegionSpec[] = [
  { name: 'near', rttMs: 20 },
  { name: 'split', rttMs: 10, ipv6RttMs: 30 },
];
const NAME = 'api.probefleet.test';
/** Enough new connections that one sample slowed by a busy CI machine does not move a median. */
const REQUESTS = 25;
/** How far a phase may be from its expected value (the regions' usual bound). */
const AGREEMENT_MS = 1;
/** A phase is at most this much over its round trip (the fidelity tests' bound); TLS adds its crypto. */
const OVER_RTT_MS = 3;
const TLS_OVER_RTT_MS = 6;

const rttOf = (region: RegionSpec, family: 4 | 6) => (family === 6 ? (region.ipv6RttMs ?? region.rttMs) : region.rttMs);

describe('DNS, TCP and TLS of a new connection from emulated regions, a resolver on the target host', {
  skip: regionsSkipReason() || needs('dnsmasq', 'dnsmasq').skip,
}, () => {
  let regions: Regions;
  let lab: TargetLab;
  let dnsmasq: ChildProcess;
  let loaded: LoadedPlan;
  let report: RunReport;

  before(async () => {
    regions = await startRegions({ regions: REGIONS, log });
    lab = await startTargetLab(regions);
    dnsmasq = regions.spawn(
      regions.target.namespace,
      '/usr/sbin/dnsmasq',
      [
        '--keep-in-foreground',
        '--conf-file=/dev/null',
        '--no-resolv',
        '--no-hosts',
        '--port=53',
        `--listen-address=${TARGET_ADDRESS}`,
        '--bind-interfaces',
        `--host-record=${NAME},${TARGET_ADDRESS},${TARGET_ADDRESS_V6}`,
        // Its own records' TTL is 0 by default: nothing a client could keep (a warm cache included).
        '--local-ttl=300',
        '--pid-file=',
        '--user=root',
      ],
      { stdio: 'ignore', realtime: true },
    );
    // Ready when a region gets an answer (bounded: 10 s).
    for (const until = Date.now() + 10_000; ; await sleep(100)) {
      const answer = await regions
        .exec(regions.region('near').namespace, 'dig', ['+short', '+tries=1', '+time=1', `@${TARGET_ADDRESS}`, NAME])
        .catch(() => '');
      if (answer.trim() === TARGET_ADDRESS) break;
      if (Date.now() > until) throw new Error('dnsmasq in the target namespace did not answer within 10 s');
    }
    const https = new URL(lab.servers.https).port;
    const keepalive = new URL(lab.servers.keepalive).port;
    const server = `${TARGET_ADDRESS}:53`;
    loaded = await parsePlan(
      `name: regions-dns
targets:
  - { name: cold, url: "https://${NAME}:${https}/", tls: { insecure: true }, dns: { server: "${server}", cache: cold } }
  - { name: warm, url: "https://${NAME}:${https}/", tls: { insecure: true }, dns: { server: "${server}", cache: warm } }
  - { name: api, url: "http://${NAME}:${keepalive}/", ipFamily: both, dns: { server: "${server}" } }
experiments:
  - { probe: reuse, requests: ${REQUESTS}, modes: [reused, new], targets: [cold, warm] }
  - { probe: reuse, requests: ${REQUESTS}, modes: [new], targets: [api] }
`,
      'regions-dns.yaml',
    );
    report = await runPlanInRegions(regions, loaded, { runId: 'regions-dns-test', log });
  });

  after(async () => {
    dnsmasq?.kill('SIGTERM');
    await lab?.close();
    await regions?.close();
  });

  /** Checks on the run's report; when the machine disturbed it (helpers/regions.ts), on a fresh run
   * of the plan's experiment `experiment` alone. */
  const measuredTwiceBy = (t: TestContext, experiment: number, check: (measured: RunReport) => Promise<void> | void) =>
    measuredTwice(t, async (again) => {
      if (!again) return check(report);
      const experiments = [loaded.plan.experiments[experiment]!];
      const plan = { ...loaded, plan: { ...loaded.plan, experiments } };
      await check(await runPlanInRegions(regions, plan, { runId: `regions-dns-test-again-${experiment}`, log }));
    });

  const reuse = (report: RunReport, region: string, target: string, mode: 'reused' | 'new') => {
    const result = report.results.find(
      (r): r is ResultOf<'reuse'> =>
        r.probe === 'reuse' && r.region === region && r.target === target && r.variant.mode === mode,
    );
    assert.ok(result?.ok, `${region} ${target} ${mode}: ${JSON.stringify(result?.error)}`);
    return result;
  };
  const phaseMedian = (result: ResultOf<'reuse'>, phase: 'resolve' | 'connect' | 'tls') =>
    median(result.details!.samples.filter((s) => s.newConnection).map((s) => s.phases[phase]!));

  /** curl's time_namelookup (IPv4: one A query, as ours), the median of 7, with the region's
   * resolv.conf naming the target host's dnsmasq (`ip netns exec` mounts /etc/netns/NS/resolv.conf). */
  async function curlNamelookupMs(namespace: string, port: string): Promise<number> {
    const dir = `/etc/netns/${namespace}`;
    await mkdir(dir, { recursive: true });
    await writeFile(`${dir}/resolv.conf`, `nameserver ${TARGET_ADDRESS}\noptions attempts:1 timeout:2\n`);
    try {
      const runs: number[] = [];
      for (let i = 0; i < 7; i++) {
        const out = await regions.exec(
          namespace,
          'curl',
          ['-4', '-sS', '-o', '/dev/null', '-w', '%{time_namelookup}', `http://${NAME}:${port}/`],
          { realtime: true },
        );
        runs.push(Number(out) * 1000);
      }
      return median(runs);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  test("cold: resolve is one RTT and agrees with curl's time_namelookup within ±1 ms; warm: ≈ 0", async (t) => {
    await measuredTwiceBy(t, 0, async (measured) => {
      for (const region of REGIONS) {
        const cold = reuse(measured, region.name, 'cold', 'new');
        const resolve = phaseMedian(cold, 'resolve');
        const curl = await curlNamelookupMs(regions.region(region.name).namespace, new URL(lab.servers.keepalive).port);
        const figures = `${region.name} (RTT ${region.rttMs} ms): resolve ${resolve.toFixed(2)} ms, curl's time_namelookup ${curl.toFixed(2)} ms`;
        t.diagnostic(figures);
        assert.equal(cold.resolution?.lookups, REQUESTS, 'a lookup per new connection');
        assert.ok(resolve >= region.rttMs && resolve <= region.rttMs + OVER_RTT_MS, figures);
        assert.ok(Math.abs(resolve - curl) <= AGREEMENT_MS, figures);

        const warm = reuse(measured, region.name, 'warm', 'new');
        const warmResolve = phaseMedian(warm, 'resolve');
        t.diagnostic(`${region.name}: warm resolve ${warmResolve.toFixed(3)} ms`);
        assert.equal(warm.resolution?.fromCache, REQUESTS);
        assert.ok(warmResolve < AGREEMENT_MS, `${region.name}: warm resolve ${warmResolve} ms`);
      }
    });
  });

  test('resolve + connect + TLS are one RTT each and add up to the new-connection cost', async (t) => {
    await measuredTwiceBy(t, 0, (measured) => {
      for (const region of REGIONS) {
        const fresh = reuse(measured, region.name, 'cold', 'new');
        const [resolve, connect, tls] = (['resolve', 'connect', 'tls'] as const).map((p) => phaseMedian(fresh, p));
        const cost = measured.comparisons.find((c) => c.region === region.name && c.target === 'cold')!;
        const warmCost = measured.comparisons.find((c) => c.region === region.name && c.target === 'warm')!;
        const sum = resolve + connect + tls;
        const figures = `${region.name} (RTT ${region.rttMs} ms): resolve ${resolve.toFixed(2)} + connect ${connect.toFixed(2)} + TLS ${tls.toFixed(2)} = ${sum.toFixed(2)} ms; new-connection cost ${cost.newConnectionCostMs.median.toFixed(2)} ms cold, ${warmCost.newConnectionCostMs.median.toFixed(2)} ms warm`;
        t.diagnostic(figures);
        assert.ok(connect >= region.rttMs && connect <= region.rttMs + OVER_RTT_MS, figures);
        assert.ok(tls >= region.rttMs && tls <= region.rttMs + TLS_OVER_RTT_MS, figures);
        assert.ok(Math.abs(cost.newConnectionCostMs.median - sum) <= OVER_RTT_MS, figures);
        // Warm: the same connection without the lookup.
        assert.ok(
          Math.abs(cost.newConnectionCostMs.median - warmCost.newConnectionCostMs.median - resolve) <= OVER_RTT_MS,
          `${region.name}: cold ${cost.newConnectionCostMs.median.toFixed(2)} ms − warm ${warmCost.newConnectionCostMs.median.toFixed(2)} ms is the lookup (${resolve.toFixed(2)} ms)`,
        );
      }
    });
  });

  test("both: api-ipv4 and api-ipv6 connect in their own family's RTT; a slower IPv6 link is said", async (t) => {
    await measuredTwiceBy(t, 1, (measured) => {
      for (const region of REGIONS) {
        for (const family of [4, 6] as const) {
          const result = reuse(measured, region.name, `api-ipv${family}`, 'new');
          const connect = phaseMedian(result, 'connect');
          const figures = `${region.name} over IPv${family}: connect ${connect.toFixed(2)} ms for an RTT of ${rttOf(region, family)} ms`;
          t.diagnostic(figures);
          assert.deepEqual(result.resolution?.answers, [[family === 4 ? TARGET_ADDRESS : TARGET_ADDRESS_V6]]);
          assert.ok(connect >= rttOf(region, family) && connect <= rttOf(region, family) + OVER_RTT_MS, figures);
        }
      }
      assert.deepEqual(
        measured.findings.filter((f) => f.code.startsWith('IP_FAMILY')).map((f) => [f.code, f.region, f.target]),
        [['IP_FAMILY_SLOWER', 'split', 'api-ipv6']],
      );
    });
  });
});
