// `probefleet coordinator`: the long-running side of a fleet, until SIGTERM or Ctrl-C.
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from './args.js';
import { NAME_PATTERN } from '../../contracts/common.js';
import { createLogger } from '../../common/log.js';
import { redactRedisUrl } from '../../common/redis.js';
import { startCoordinator } from '../../coordinator/coordinator-service.js';
import { DEFAULT_REPORT_RETENTION_DAYS } from '../../coordinator/report-store.js';
import { pushgatewayArgs, pushgatewaySettingsOf } from './pushgateway-args.js';
import { fleetOf, redisArgs } from './redis-args.js';
import { BadArgumentError } from '../../common/bad-input.js';
import { maxJobsArgs, maxJobsOf } from './max-jobs-args.js';

export const DEFAULT_COORDINATOR_PORT = 9470;

const options = (y: Argv) =>
  maxJobsArgs(pushgatewayArgs(redisArgs(y)))
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
    .option('report-retention-days', {
      type: 'number',
      default: DEFAULT_REPORT_RETENTION_DAYS,
      describe: 'how long stored run reports are kept',
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
      describe: 'how often runs past their deadline are looked for',
    });

export const coordinatorCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'coordinator',
  describe: 'Run the coordinator: fire schedules, store run reports, serve /metrics and /healthz',
  builder: options,
  handler: async (args) => {
    for (const region of args.region) {
      if (!NAME_PATTERN.test(region)) throw new BadArgumentError(`--region: "${region}" is not a region name`);
    }
    if (!(args.reportRetentionDays > 0))
      throw new BadArgumentError(`--report-retention-days must be positive (got ${args.reportRetentionDays})`);
    const pushgateway = pushgatewaySettingsOf(args);
    const maxJobs = maxJobsOf(args);
    const log = createLogger('coordinator');
    const fleet = fleetOf(args, log, Math.round(args.reportRetentionDays * 86_400));
    log.info(
      { redis: redactRedisUrl(fleet.redis.url), prefix: fleet.prefix, signsJobs: fleet.jobKey !== undefined },
      'connecting',
    );
    const coordinator = await startCoordinator({
      fleet,
      log,
      listen: { host: args.host, port: args.port },
      regions: args.region,
      sweepIntervalMs: args.sweepIntervalMs,
      pushgateway,
      maxJobs,
    });
    log.info(
      { metrics: `${coordinator.url}/metrics`, healthz: `${coordinator.url}/healthz` },
      'serving; Ctrl-C to stop',
    );
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    await coordinator.close();
    await fleet.close();
    log.info('coordinator stopped');
  },
};
