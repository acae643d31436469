// A benchmark child process: a floor under probefleet's end-to-end queue numbers. A bare BullMQ
// Worker on a region's queue, with the worker's connection settings and concurrency 1, taking the
// same jobs as `probefleet worker` until SIGTERM. Its processor returns when it ran (the result's
// times, as a probe's result gives them) and, with a URL, first does what a one-request `reuse`
// job does on the wire, for each probe job of the batch: a new undici Client, one GET, the body
// read, the connection closed.
//   no URL: the queue alone (BullMQ's own cost per job)
//   URL:    the fair floor, same queue engine, same client, same request per job
// probefleet workers / the fair floor = what probefleet's own bookkeeping costs per job.
// argv: redis URL, region, [target URL].
import { Worker, type Job } from 'bullmq';
import { Client } from 'undici';
import { bullmqConnection } from '../common/redis.js';
import { DEFAULT_QUEUE_PREFIX, regionQueueName } from '../contracts/queues.js';

const [url, region, target] = process.argv.slice(2);
const { origin, pathname, search } = new URL(target ?? 'http://127.0.0.1/');

async function oneRequest(): Promise<void> {
  const client = new Client(origin);
  try {
    const { body } = await client.request({ path: pathname + search, method: 'GET' });
    await body.dump();
  } finally {
    await client.close();
  }
}

const worker = new Worker(
  regionQueueName(region),
  // One request per probe job of the batch, as probefleet's worker makes for these jobs.
  async (job: Job<{ jobs: unknown[] }>) => {
    const startedAt = new Date().toISOString();
    if (target) for (let i = 0; i < job.data.jobs.length; i++) await oneRequest();
    return { startedAt, finishedAt: new Date().toISOString(), jobs: job.data.jobs.length };
  },
  {
    connection: bullmqConnection({ url }),
    prefix: DEFAULT_QUEUE_PREFIX,
    concurrency: 1,
  },
);
worker.on('error', (err) => process.stderr.write(`bare worker: ${err.message}\n`));
process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
