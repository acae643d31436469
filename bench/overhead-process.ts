// A benchmark child process: where probefleet's sequential time goes. In one process, after
// warm-up rounds, it alternates N sequential requests through each layer probefleet adds on top
// of undici, and prints the median CPU time and wall time per request of each as JSON.
import { performance } from 'node:perf_hooks';
import { Client } from 'undici';
import type { JobPayload } from '../contracts/job.js';
import { createLogger } from '../common/log.js';
import { median } from '../common/stats.js';
import { executeJob } from '../worker/execute-job.js';
import { TimedHttpClient } from '../worker/http/timed-client.js';
import { EMBEDDED_POLICY_SETTINGS, TargetPolicy } from '../worker/target-policy.js';

export interface LayerCost {
  layer: string;
  cpuMicros: number;
  wallMicros: number;
}

const job = JSON.parse(process.argv[2]) as JobPayload & { probe: 'reuse' };
const requests = job.params.requests;
const url = new URL(job.target.url);
const log = createLogger('bench-overhead', 'warn');
const WARM_UP_ROUNDS = 10;
const ROUNDS = 15;

const layers: Record<string, () => Promise<void>> = {
  'undici Client.dispatch (the floor)': async () => {
    const client = new Client(url.origin);
    for (let i = 0; i < requests; i++) {
      await new Promise<void>((resolve, reject) =>
        client.dispatch(
          { path: url.pathname, method: 'GET' },
          { onConnect() {}, onHeaders: () => true, onData: () => true, onComplete: () => resolve(), onError: reject },
        ),
      );
    }
    await client.close();
  },
  'undici Client.request + body stream': async () => {
    const client = new Client(url.origin);
    for (let i = 0; i < requests; i++) {
      const response = await client.request({ path: url.pathname, method: 'GET' });
      for await (const chunk of response.body) void chunk;
    }
    await client.close();
  },
  'probefleet TimedHttpClient (phases, sample per request)': async () => {
    const client = new TimedHttpClient({
      target: job.target,
      timeoutMs: job.params.timeoutMs,
      policy: new TargetPolicy(EMBEDDED_POLICY_SETTINGS),
    });
    for (let i = 0; i < requests; i++) await client.request({ seq: i });
    await client.close();
  },
  'probefleet reuse job (executeJob: + job signal per request, sequence, summary)': async () => {
    await executeJob(job, { region: 'local', log });
  },
};

const costs = new Map<string, { cpu: number[]; wall: number[] }>(
  Object.keys(layers).map((k) => [k, { cpu: [], wall: [] }]),
);
for (let round = 0; round < WARM_UP_ROUNDS + ROUNDS; round++) {
  for (const [layer, run] of Object.entries(layers)) {
    const cpuBefore = process.cpuUsage();
    const start = performance.now();
    await run();
    const wall = performance.now() - start;
    const cpu = process.cpuUsage(cpuBefore);
    if (round < WARM_UP_ROUNDS) continue;
    costs.get(layer)!.cpu.push((cpu.user + cpu.system) / requests);
    costs.get(layer)!.wall.push((wall * 1000) / requests);
  }
}
const out: LayerCost[] = [...costs].map(([layer, c]) => ({
  layer,
  cpuMicros: median(c.cpu),
  wallMicros: median(c.wall),
}));
process.stdout.write(JSON.stringify(out));
