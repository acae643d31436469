// What pushing to a Pushgateway costs a worker: the queue benchmark's end-to-end run (10,000
// one-request jobs against Debian's nginx through 2 `probefleet worker` processes, bench/queue.ts)
// with no gateway, with Debian's prometheus-pushgateway at the default push interval, and pushing
// after every job (interval 0, what workers did before the interval), beside the fair floor.
// Rounds rotate the order; medians. Not part of `npm run bench`:
//   npm run build && node dist/bench/pushgateway-cost.js [--rounds 3]
import { parseArgs } from 'node:util';
import { startNginx } from '../common/nginx-server.js';
import { startPushgateway } from '../common/prometheus-server.js';
import { median } from '../common/stats.js';
import { endToEndRun, startBenchRedis, type EndToEndRun } from './queue.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const rounds = Number(values.rounds);
if (!(Number.isInteger(rounds) && rounds >= 1 && rounds <= 10))
  throw new Error(`--rounds: 1 to 10, got ${values.rounds}`);

const nginx = await startNginx([{ files: { 'index.html': 'probefleet bench.\n\n' }, directives: ['access_log off;'] }]);
const redis = await startBenchRedis();
const gateway = await startPushgateway();
const variants: { name: string; tool: EndToEndRun['tool']; workerArgs: string[] }[] = [
  { name: 'fair floor (bare BullMQ + undici)', tool: 'bullmq-undici', workerArgs: [] },
  { name: 'probefleet, no Pushgateway', tool: 'probefleet', workerArgs: [] },
  {
    name: 'probefleet, pushing every 5 s (the default)',
    tool: 'probefleet',
    workerArgs: ['--pushgateway', gateway.url],
  },
  {
    name: 'probefleet, pushing after every job',
    tool: 'probefleet',
    workerArgs: ['--pushgateway', gateway.url, '--pushgateway-interval-seconds', '0'],
  },
];
const measured = new Map<string, { jobsPerSecond: number; cpuUs: number }[]>();
try {
  for (let round = 0; round < rounds; round++) {
    for (const variant of round % 2 ? [...variants].reverse() : variants) {
      const run = await endToEndRun(redis, `${nginx.urls[0]}/`, variant.tool, undefined, variant.workerArgs);
      await redis.flush();
      const row = { jobsPerSecond: run.jobsPerSecond, cpuUs: (run.workerCpuSeconds * 1e6) / run.jobs };
      measured.set(variant.name, [...(measured.get(variant.name) ?? []), row]);
      process.stderr.write(
        `pushgateway-cost: round ${round + 1}/${rounds}, ${variant.name}: ${Math.round(row.jobsPerSecond)} jobs/s, ${Math.round(row.cpuUs)} µs of worker CPU per job\n`,
      );
    }
  }
} finally {
  await gateway.stop();
  await redis.stop();
  await nginx.stop();
}
process.stdout.write(
  `| workers | jobs/s | worker CPU per job |\n|---|---:|---:|\n${variants
    .map(({ name }) => {
      const rows = measured.get(name) ?? [];
      return `| ${name} | ${Math.round(median(rows.map((r) => r.jobsPerSecond)))} | ${Math.round(median(rows.map((r) => r.cpuUs)))} µs |`;
    })
    .join('\n')}\n\nMedians over ${rounds} rounds.\n`,
);
