// `probefleet worker --region R`: takes jobs from region R's queue until SIGTERM or Ctrl-C.
// First: V8's heap settings must hold while the rest of the worker's code loads.
import '../../worker/heap-settings.js';
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { NAME_PATTERN } from '../../contracts/common.js';
import { createLogger } from '../../common/log.js';
import { redactRedisUrl } from '../../common/redis.js';
import { DEFAULT_STALL_TIMEOUT_SECONDS, startRegionWorker } from '../../worker/queue-worker.js';
import { warmUpRequestPath } from '../../worker/warm-up.js';
import { createJobMetrics } from '../../metrics/job-metrics.js';
import { serveMetrics } from '../../metrics/metrics-server.js';
import { countRedisErrors } from '../../metrics/redis-metrics.js';
import { instanceArg, instanceOf, pushgatewayArgs, pushgatewaySettingsOf } from '../options/pushgateway.js';
import { jobKeyOf, prefixOf, redisArgs } from '../options/redis.js';
import { redisSettingsOf } from '../options/fleet.js';
import { retentionArgs, retentionOf } from '../options/retention.js';
import { BadArgumentError } from '../../common/bad-input.js';
import { targetPolicyArgs, targetPolicyOf } from '../options/target-policy.js';

/** After the grace period: handing jobs back (5 s), closing without Redis (4 s), the last pushes. */
const SHUTDOWN_AFTER_GRACE_MS = 10_000;
const LAST_PUSHES_MS = 1_000;

const options = (y: Argv) =>
  targetPolicyArgs(instanceArg(pushgatewayArgs(retentionArgs(redisArgs(y), ['jobs']))), false)
    .option('region', {
      type: 'string',
      demandOption: true,
      describe: "the region this worker measures from; it takes only this region's jobs",
    })
    .option('concurrency', {
      type: 'number',
      default: 1,
      describe: 'jobs at once (1 keeps measurements from competing for the CPU)',
    })
    .option('stall-timeout-seconds', {
      type: 'number',
      describe: `a job whose worker died or hung is back in the queue within this (its lock lasts half, the stall check runs every half); give every worker of a fleet the same (default: $PROBEFLEET_STALL_TIMEOUT_SECONDS, else ${DEFAULT_STALL_TIMEOUT_SECONDS})`,
    })
    .option('shutdown-grace-seconds', {
      type: 'number',
      default: 30,
      describe:
        'on SIGTERM, how long jobs in flight may finish before they are stopped and handed back to the queue; the worker exits within this + 10 s, whatever Redis does',
    })
    .option('metrics-port', {
      type: 'number',
      describe:
        "serve this worker's own metrics (jobs, Redis errors, push failures, process) on /metrics at this port, and /healthz (503 while Redis refuses it jobs); 0: any free port, logged (default: $PROBEFLEET_METRICS_PORT, else not served)",
    })
    .option('metrics-host', {
      type: 'string',
      default: '127.0.0.1',
      describe: 'address of /metrics (0.0.0.0 in a container)',
    });

export const workerCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'worker',
  describe: "Run a region worker: take that region's jobs from Redis and measure",
  builder: options,
  handler: async (args) => {
    if (!NAME_PATTERN.test(args.region))
      throw new BadArgumentError(`--region: "${args.region}" is not a region name (a-z, 0-9, "-", "_")`);
    if (!Number.isInteger(args.concurrency) || args.concurrency < 1)
      throw new BadArgumentError(`--concurrency must be a positive integer (got ${args.concurrency})`);
    const stallTimeoutSeconds =
      args.stallTimeoutSeconds ??
      (process.env.PROBEFLEET_STALL_TIMEOUT_SECONDS ? Number(process.env.PROBEFLEET_STALL_TIMEOUT_SECONDS) : undefined);
    if (stallTimeoutSeconds !== undefined && !(stallTimeoutSeconds >= 0.2))
      throw new BadArgumentError(`--stall-timeout-seconds must be at least 0.2 (got ${stallTimeoutSeconds})`);
    if (!(args.shutdownGraceSeconds >= 0))
      throw new BadArgumentError(`--shutdown-grace-seconds must be 0 or more (got ${args.shutdownGraceSeconds})`);
    const retention = retentionOf(args);
    const metricsPort =
      args.metricsPort ??
      (process.env.PROBEFLEET_METRICS_PORT ? Number(process.env.PROBEFLEET_METRICS_PORT) : undefined);
    if (metricsPort !== undefined && !(Number.isInteger(metricsPort) && metricsPort >= 0 && metricsPort <= 65535)) {
      throw new BadArgumentError(`--metrics-port must be a port number, or 0 for any free port (got ${metricsPort})`);
    }
    const pushgateway = pushgatewaySettingsOf(args);
    const targetPolicy = targetPolicyOf(args, false);
    const jobKey = jobKeyOf();
    const log = createLogger(`worker`).child({ region: args.region });
    const metrics = createJobMetrics({ region: args.region, instance: instanceOf(args), pushgateway, log });
    if (metrics.pusher)
      log.info(
        { pushgateway: metrics.pusher.url, intervalSeconds: args.pushgatewayIntervalSeconds },
        'pushing probe metrics while jobs finish',
      );
    const countRedisError = countRedisErrors(metrics.registry);
    // The worker starts after the server (warming up comes first): until then, nothing is wrong.
    let problem = (): string | undefined => undefined;
    const metricsServer =
      metricsPort !== undefined
        ? await serveMetrics(metrics.registry, { host: args.metricsHost, port: metricsPort }, () => problem())
        : undefined;
    if (metricsServer) log.info({ metrics: `${metricsServer.url}/metrics` }, 'serving /metrics');
    log.info(targetPolicy.settings, 'target policy: private and link-local addresses refused unless allowed');
    if (jobKey) log.info('PROBEFLEET_JOB_KEY set: only jobs signed with it run');
    else
      log.warn(
        'PROBEFLEET_JOB_KEY not set: jobs are not verified; anyone who can write to this Redis can aim this worker',
      );
    // Before the first job, so that it measures the target rather than the JIT (no request leaves this process).
    await warmUpRequestPath(args.region, log);
    const redis = redisSettingsOf(args);
    log.info({ redis: redactRedisUrl(redis.url) }, 'connecting');
    const worker = startRegionWorker({
      redis,
      prefix: prefixOf(args),
      region: args.region,
      concurrency: args.concurrency,
      ...(stallTimeoutSeconds !== undefined ? { stallTimeoutMs: Math.round(stallTimeoutSeconds * 1000) } : {}),
      retention,
      log,
      observer: metrics,
      targetPolicy,
      ...(jobKey ? { jobKey } : {}),
      onRedisError: countRedisError,
    });
    problem = worker.problem;
    // A job that crashes the process is named in its last line; its batch comes back (the stall
    // check) and runs each job in a process of its own, so it cannot take a second worker down.
    process.on('uncaughtException', (err) => {
      log.fatal(
        { err, probeJobs: worker.probeJobsRunning() },
        'the worker crashed while running these probe jobs; their batch goes back to the queue',
      );
      process.exit(1);
    });
    const signalled = new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    // A worker that cannot start (a Redis of another kind than its URL says) ends with the reason.
    const signal = await Promise.race([signalled, worker.ready.then(() => signalled)]).catch(async (err: Error) => {
      await worker.close(0);
      await metrics.close(LAST_PUSHES_MS);
      await metricsServer?.close();
      throw err;
    });
    log.info(
      { signal, graceSeconds: args.shutdownGraceSeconds },
      'stopping: no new jobs; finishing the ones in flight',
    );
    const outcome = await worker.close(args.shutdownGraceSeconds * 1000);
    // The pushes of the last jobs: bounded like the rest of the shutdown (a gateway down costs them).
    await metrics.close(outcome === 'drained' ? SHUTDOWN_AFTER_GRACE_MS : LAST_PUSHES_MS);
    await metricsServer?.close();
    log.info({ outcome }, 'worker stopped');
  },
};
