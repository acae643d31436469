// `probefleet coordinator`: the long-running side of a fleet, until SIGTERM or Ctrl-C.
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { NAME_PATTERN } from '../../contracts/common.js';
import { createLogger } from '../../common/log.js';
import { redactRedisUrl } from '../../common/redis.js';
import { startCoordinator } from '../../coordinator/coordinator-service.js';
import { openFleet } from '../../coordinator/fleet.js';
import { pushgatewayArgs, pushgatewaySettingsOf } from '../options/pushgateway.js';
import { redisArgs, redisTimeoutArg, redisTimeoutMsOf } from '../options/redis.js';
import { fleetOptionsOf } from '../options/fleet.js';
import { retentionArgs, retentionOf } from '../options/retention.js';
import { BadArgumentError } from '../../common/bad-input.js';
import { maxJobsArgs, maxJobsOf } from '../options/max-jobs.js';
import { boundHeapGrowth } from '../../common/heap-growth.js';
import { comparisonHeapArgs, comparisonHeapMbOf } from '../options/comparison-heap.js';

export const DEFAULT_COORDINATOR_PORT = 9470;

const options = (y: Argv) =>
  comparisonHeapArgs(maxJobsArgs(pushgatewayArgs(retentionArgs(redisTimeoutArg(redisArgs(y)), ['jobs', 'reports']))))
    .option('host', {
      type: 'string',
      default: '127.0.0.1',
      describe: 'address of /metrics and /healthz (0.0.0.0 in a container)',
    })
    .option('port', {
      type: 'number',
      default: DEFAULT_COORDINATOR_PORT,
      describe: 'port of /metrics and /healthz (0: any free port)',
    })
    .option('region', {
      type: 'string',
      array: true,
      default: [] as string[],
      describe: 'regions whose queue depths /metrics shows before any run used them',
    })
    .option('sweep-interval-ms', {
      type: 'number',
      default: 5000,
      describe: 'how often runs past their deadline are looked for, and queue depths read for /metrics',
    });

export const coordinatorCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'coordinator',
  describe: 'Run the coordinator: fire schedules, store run reports, serve /metrics and /healthz',
  builder: options,
  handler: async (args) => {
    // Runs for months and submits the schedules' runs (up to --max-jobs jobs each).
    boundHeapGrowth();
    for (const region of args.region) {
      if (!NAME_PATTERN.test(region)) throw new BadArgumentError(`--region: "${region}" is not a region name`);
    }
    const pushgateway = pushgatewaySettingsOf(args);
    const redisTimeoutMs = redisTimeoutMsOf(args);
    const maxJobs = maxJobsOf(args);
    const comparisonHeapMb = comparisonHeapMbOf(args);
    const log = createLogger('coordinator');
    // Unbounded commands: the coordinator waits out a Redis restart (its reads for /metrics and
    // its checks have their own bound, --redis-timeout).
    const fleet = openFleet(fleetOptionsOf(args, log, { retention: retentionOf(args) }));
    log.info(
      {
        redis: redactRedisUrl(fleet.redis.url),
        prefix: fleet.prefix,
        signsJobs: fleet.jobKey !== undefined,
        retention: fleet.retention,
      },
      'connecting',
    );
    const stopped = new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    const coordinator = await Promise.race([
      startCoordinator({
        fleet,
        log,
        listen: { host: args.host, port: args.port },
        regions: args.region,
        sweepIntervalMs: args.sweepIntervalMs,
        redisTimeoutMs,
        pushgateway,
        maxJobs,
        comparisonHeapMb,
      }).catch(async (err: Error) => {
        await fleet.close();
        throw err;
      }),
      stopped.then(() => undefined),
    ]);
    if (!coordinator) {
      // Stopped while still waiting for Redis to start: nothing taken, nothing to hand back.
      log.warn('stopped before Redis answered');
      await fleet.close();
      process.exit(0);
    }
    log.info(
      { metrics: `${coordinator.url}/metrics`, healthz: `${coordinator.url}/healthz` },
      'serving; Ctrl-C to stop',
    );
    await stopped;
    await coordinator.close();
    await fleet.close();
    log.info('coordinator stopped');
  },
};
