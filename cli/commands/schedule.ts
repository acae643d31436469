// `probefleet schedule add|list|remove`: a plan's runs on a cron schedule (job schedulers on
// Redis; `probefleet coordinator` turns each firing into a run).
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { commandLogger } from '../../common/log.js';
import { renderTable } from '../../coordinator/report/table.js';
import { listSchedules, type ScheduleInfo } from '../../coordinator/schedule-list.js';
import { redisArgs, redisTimeoutArg } from '../options/redis.js';
import { withFleet, withFleetConnection } from '../options/fleet.js';
import { BadArgumentError } from '../../common/bad-input.js';
import { labAtArg, labAtOf } from '../options/lab.js';
import { maxJobsArgs, maxJobsOf } from '../options/max-jobs.js';
import { plural } from '../../common/plural.js';

const addOptions = (y: Argv) =>
  maxJobsArgs(labAtArg(redisTimeoutArg(redisArgs(y))))
    .positional('plan', { type: 'string', demandOption: true, describe: 'plan YAML file' })
    .option('cron', {
      type: 'string',
      describe: 'five-field cron expression, e.g. "0 2 * * *" (default: the plan\'s schedule.cron)',
    })
    .option('tz', {
      type: 'string',
      describe: "IANA time zone of the cron expression (default: the plan's schedule.tz, else UTC)",
    })
    .option('every', { type: 'number', describe: 'fire every N seconds instead of on a cron expression' })
    .option('deadline', {
      type: 'number',
      describe: 'seconds after firing when jobs no worker took are reported as not run (default: from the plan)',
    });
const listOptions = (y: Argv) =>
  redisTimeoutArg(redisArgs(y)).option('json', { type: 'boolean', describe: 'print the schedules as JSON' });
const removeOptions = (y: Argv) =>
  redisTimeoutArg(redisArgs(y)).positional('name', {
    type: 'string',
    demandOption: true,
    describe: "schedule name (the plan's name)",
  });

const log = commandLogger('schedule');

function when(info: ScheduleInfo): string {
  return info.cron ? `cron "${info.cron}" ${info.tz}` : `every ${(info.everyMs ?? 0) / 1000} s`;
}

const add: CommandModule<object, ArgsOf<typeof addOptions>> = {
  command: 'add <plan>',
  describe: 'Run a plan on a schedule (one schedule per plan name: adding again replaces it)',
  builder: addOptions,
  handler: async (args) => {
    // Loaded here, not at the top: `list` needs none of them (the plan's schemas, the YAML parser).
    const [{ loadPlanFile }, { withLabTargets }, { addSchedule, scheduleSpecFor }] = await Promise.all([
      import('../../coordinator/plan-loader.js'),
      import('../../coordinator/lab-targets.js'),
      import('../../coordinator/schedules.js'),
    ]);
    // The schedule keeps the plan as it will run: lab targets where --lab-at says the lab is.
    const loaded = withLabTargets(
      await loadPlanFile(args.plan, { maxJobs: maxJobsOf(args) }),
      args.labAt === undefined ? undefined : labAtOf(args.labAt),
      'give --lab-at HOST:PORT, where the lab runs for the workers',
    );
    if (args.deadline !== undefined && !(args.deadline >= 1))
      throw new BadArgumentError(`--deadline must be at least 1 second (got ${args.deadline})`);
    let spec;
    try {
      spec = scheduleSpecFor(loaded, { cron: args.cron, tz: args.tz, everySeconds: args.every });
    } catch (err) {
      throw new BadArgumentError((err as Error).message);
    }
    const info = await withFleet(args, log, (fleet) => addSchedule(fleet, loaded, spec, args.deadline));
    process.stdout.write(
      `schedule ${info.name}: ${when(info)}, ${plural(info.jobs, 'job')} over ${info.regions.join(', ')}; next run ${info.next?.toISOString() ?? '-'}\n`,
    );
  },
};

const list: CommandModule<object, ArgsOf<typeof listOptions>> = {
  command: 'list',
  describe: 'List schedules with their next fire time',
  builder: listOptions,
  handler: async (args) => {
    const schedules = await withFleetConnection(args, log, listSchedules);
    if (args.json) {
      process.stdout.write(
        `${JSON.stringify(
          schedules.map((s) => ({ ...s, next: s.next?.toISOString() })),
          null,
          2,
        )}\n`,
      );
      return;
    }
    if (schedules.length === 0) {
      process.stdout.write('no schedules (add one with: probefleet schedule add PLAN --cron "0 2 * * *")\n');
      return;
    }
    process.stdout.write(
      `${renderTable(
        ['name', 'when', 'next run (UTC)', 'regions', 'jobs'],
        schedules.map((s) => [s.name, when(s), s.next?.toISOString() ?? '-', s.regions.join(', '), String(s.jobs)]),
        'lllll',
      )}\n`,
    );
  },
};

const remove: CommandModule<object, ArgsOf<typeof removeOptions>> = {
  command: 'remove <name>',
  describe: "Remove a plan's schedule (runs already started go on)",
  builder: removeOptions,
  handler: async (args) => {
    const { removeSchedule } = await import('../../coordinator/schedules.js');
    const removed = await withFleet(args, log, (fleet) => removeSchedule(fleet, args.name));
    if (!removed) {
      process.stderr.write(`probefleet: no schedule named "${args.name}" (see: probefleet schedule list)\n`);
      process.exitCode = 1;
      return;
    }
    process.stdout.write(`schedule ${args.name} removed\n`);
  },
};

export const scheduleCommand: CommandModule = {
  command: 'schedule',
  describe: 'Run plans on a schedule (needs Redis and a running coordinator)',
  builder: (y) =>
    y.command(add).command(list).command(remove).demandCommand(1, 'schedule needs a subcommand: add, list or remove'),
  handler: () => {},
};
