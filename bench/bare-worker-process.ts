// A benchmark child process: the floor under probefleet's end-to-end queue numbers. A bare
// BullMQ Worker on a region's queue, with the worker's connection settings and concurrency 1,
// whose processor does nothing but say when (the result's times, as a probe's result gives them);
// it takes the same jobs as `probefleet worker` until SIGTERM.
// probefleet workers / this = what running the probe and its bookkeeping cost per job.
// argv: redis URL, region.
import { Worker } from 'bullmq';
import { bullmqConnection } from '../common/redis.js';
import { DEFAULT_QUEUE_PREFIX, regionQueueName } from '../contracts/queues.js';

const [url, region] = process.argv.slice(2);
const worker = new Worker(
  regionQueueName(region),
  async () => {
    const now = new Date().toISOString();
    return { startedAt: now, finishedAt: now };
  },
  {
    connection: bullmqConnection({ url }),
    prefix: DEFAULT_QUEUE_PREFIX,
    concurrency: 1,
  },
);
worker.on('error', (err) => process.stderr.write(`bare worker: ${err.message}\n`));
process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
