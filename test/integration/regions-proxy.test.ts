// An egress proxy on the target host of emulated regions (Debian's tinyproxy, in the target
// namespace): from each region, the `proxy` phase of a new connection is the CONNECT round trip,
// one RTT of that region's link, and agrees with curl's own (`curl -x ... -p`: time_pretransfer -
// time_connect, the tunnel) in the same namespace within the regions' usual ±1 ms.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '../../common/log.js';
import { median } from '../../common/stats.js';
import type { ResultOf, RunReport } from '../../contracts/result.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { runPlanInRegions } from '../../regions/fleet-run.js';
import { startRegions, TARGET_ADDRESS, type RegionSpec, type Regions } from '../../regions/harness.js';
import { startTargetLab, type TargetLab } from '../../regions/target-lab.js';
import { runAlone } from '../helpers/exclusive.js';
import { regionsSkipReason } from '../helpers/regions.js';
import { tempDir } from '../helpers/temp-dir.js';
import { needsTinyproxy } from '../helpers/tinyproxy.js';

// Measures at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

const log = createLogger('test', 'silent');
const REGIONS: RegionSpec[] = [
  { name: 'ref', rttMs: 2 },
  { name: 'far', rttMs: 40 },
];
const PROXY_PORT = 3128;
/** How far probefleet's CONNECT round trip may be from curl's in the same region (the regions' usual bound). */
const AGREEMENT_MS = 1;

describe('a proxy on the target host of emulated regions', { skip: regionsSkipReason() || needsTinyproxy.skip }, () => {
  let regions: Regions;
  let lab: TargetLab;
  let proxy: ChildProcess;
  let report: RunReport;

  before(async () => {
    regions = await startRegions({ regions: REGIONS, log });
    lab = await startTargetLab(regions);
    const dir = tempDir('probefleet-regions-proxy-');
    const config = path.join(dir, 'tinyproxy.conf');
    await writeFile(
      config,
      [
        `Port ${PROXY_PORT}`,
        `Listen ${TARGET_ADDRESS}`,
        'Timeout 30',
        'MaxClients 50',
        'Allow 10.77.0.0/16',
        'LogLevel Warning',
        `LogFile "${path.join(dir, 'tinyproxy.log')}"`,
        `PidFile "${path.join(dir, 'tinyproxy.pid')}"`,
        'DisableViaHeader Yes',
      ].join('\n'),
    );
    proxy = regions.spawn(regions.target.namespace, 'tinyproxy', ['-d', '-c', config], {
      stdio: 'ignore',
      realtime: true,
    });
    const url = `${lab.servers.keepalive}/`;
    // Ready when a tunnel through it answers from a region (bounded: 10 s).
    for (const until = Date.now() + 10_000; ; await sleep(100)) {
      const code = await regions
        .exec(regions.region('ref').namespace, 'curl', [
          '-s',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code}',
          '-x',
          `http://${TARGET_ADDRESS}:${PROXY_PORT}`,
          '-p',
          url,
        ])
        .catch(() => '');
      if (code === '200') break;
      if (Date.now() > until) throw new Error('tinyproxy in the target namespace did not open a tunnel within 10 s');
    }
    const loaded = await parsePlan(
      `name: regions-proxy
targets: [{ name: http, url: "${url}", proxy: "http://${TARGET_ADDRESS}:${PROXY_PORT}" }]
experiments: [{ probe: reuse, requests: 15, modes: [new] }]
`,
      'regions-proxy.yaml',
    );
    report = await runPlanInRegions(regions, loaded, { runId: 'regions-proxy-test', log });
  });

  after(async () => {
    proxy?.kill('SIGTERM');
    await lab?.close();
    await regions?.close();
  });

  /** curl's CONNECT round trip through the same proxy from a region: the median of 7 runs. */
  async function curlConnectMs(namespace: string): Promise<number> {
    const runs: number[] = [];
    for (let i = 0; i < 7; i++) {
      const out = await regions.exec(
        namespace,
        'curl',
        [
          '-sS',
          '-o',
          '/dev/null',
          '-x',
          `http://${TARGET_ADDRESS}:${PROXY_PORT}`,
          '-p',
          '-w',
          '%{time_connect} %{time_pretransfer}',
          `${lab.servers.keepalive}/`,
        ],
        { realtime: true },
      );
      const [connect, pretransfer] = out.split(' ').map((s) => Number(s) * 1000);
      runs.push(pretransfer - connect);
    }
    return median(runs);
  }

  test("the proxy phase is one RTT of the region's link, and curl's CONNECT agrees within ±1 ms", async (t) => {
    for (const { name, rttMs } of REGIONS) {
      const result = report.results.find((r): r is ResultOf<'reuse'> => r.region === name && r.probe === 'reuse')!;
      assert.equal(result.ok, true, `${name}: ${JSON.stringify(result.error)}`);
      const ours = median(result.details!.samples.filter((s) => s.newConnection).map((s) => s.phases.proxy!));
      const curl = await curlConnectMs(regions.region(name).namespace);
      t.diagnostic(
        `${name} (RTT ${rttMs} ms): proxy phase ${ours.toFixed(2)} ms, curl's CONNECT ${curl.toFixed(2)} ms`,
      );
      assert.ok(
        Math.abs(ours - curl) <= AGREEMENT_MS,
        `${name}: probefleet ${ours.toFixed(2)} ms, curl ${curl.toFixed(2)} ms`,
      );
      // One round trip of the link, and the proxy's own work (its connect to the lab is local).
      assert.ok(
        ours >= rttMs && ours <= rttMs + Math.max(3, rttMs * 0.1),
        `${name}: ${ours.toFixed(2)} ms for an RTT of ${rttMs} ms`,
      );
    }
  });
});
