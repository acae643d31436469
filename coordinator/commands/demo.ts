// `probefleet demo`: a whole fleet on one machine. Emulated regions (regions/harness.ts; default
// three with different round-trip times), a redis-server of its own on a free port, the lab on
// the target host, a coordinator and one real worker process per region inside that region's
// namespace (regions/region-fleet.ts); then `probefleet run PLAN --redis` across the regions,
// its report, and everything torn down again, also after a failure or Ctrl-C. Needs root.
import { fileURLToPath } from 'node:url';
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from './args.js';
import { createLogger } from '../../common/log.js';
import { startRegions, type Regions } from '../../regions/harness.js';
import { checkRegionsSupported, RegionsUnavailableError } from '../../regions/preflight.js';
import { startFleetRedis, startRegionFleet, type FleetRedis, type RegionFleet } from '../../regions/region-fleet.js';
import { hasCommand } from '../../regions/system.js';
import { startTargetLab, type TargetLab } from '../../regions/target-lab.js';
import { loadPlanFile } from '../plan-loader.js';
import { renderTable } from '../report/table.js';
import { describeRegions, regionOptions, regionSpecs } from './regions.js';

export const DEMO_PLAN = fileURLToPath(new URL('../../../examples/regions-demo.yaml', import.meta.url));

const options = (y: Argv) =>
  regionOptions(y)
    .positional('plan', { type: 'string', default: DEMO_PLAN, defaultDescription: 'examples/regions-demo.yaml', describe: 'plan YAML file; its targets point at the target host, 10.77.0.1' })
    .option('json', { type: 'string', describe: 'write the full run (probefleet.run/v1) to this file' })
    .option('forward-port', {
      type: 'number',
      array: true,
      default: [] as number[],
      describe: 'more TCP ports of 127.0.0.1 here that the regions reach at their own 127.0.0.1 (the fleet\'s Redis is always forwarded)',
    })
    .option('worker-arg', {
      type: 'string',
      array: true,
      default: [] as string[],
      describe: 'an extra option for every worker, e.g. --worker-arg=--concurrency=2; repeat for more',
    });

function describeFleet(redis: FleetRedis, lab: TargetLab, fleet: RegionFleet, regions: Regions): string {
  const ports = Object.values(lab.servers).map((url) => Number(new URL(url).port));
  const rows = [
    ['redis-server', String(redis.pid), 'this machine', `${redis.url} (the same address in every region, without delay)`],
    ['lab target', '-', regions.target.namespace, `${regions.target.address}, ports ${Math.min(...ports)}-${Math.max(...ports)}`],
    ...fleet.processes.map((p) => [p.what, String(p.pid), p.namespace ?? 'this machine', p.what === 'coordinator' ? fleet.metricsUrl : '']),
  ];
  return `Fleet (every process is stopped when the demo ends)\n${renderTable(['process', 'pid', 'runs in', 'address'], rows, 'lrll')}\nlab CA certificate: ${lab.caFile}\n`;
}

export const demoCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'demo [plan]',
  describe: 'A fleet on this machine: emulated regions, Redis, a coordinator and a worker per region; runs a plan across the regions, prints the comparison, tears down (root)',
  builder: options,
  handler: async (args) => {
    const log = createLogger('demo', process.env.PROBEFLEET_LOG_LEVEL ?? 'warn');
    await loadPlanFile(args.plan); // a bad plan is bad input (exit 2), before anything is built
    const specs = regionSpecs(args.region);
    if (!specs) return;
    checkRegionsSupported();
    // Its own Redis, and setpriv to tie every process it starts to itself.
    const missing = [
      ['redis-server', 'redis-server'],
      ['setpriv', 'util-linux'],
    ].filter(([command]) => !hasCommand(command));
    if (missing.length > 0) {
      throw new RegionsUnavailableError(`the demo needs ${missing.map(([c]) => c).join(' and ')}: apt-get install ${missing.map(([, p]) => p).join(' ')}`);
    }

    const startedAt = Date.now();
    const redis = await startFleetRedis();
    let regions: Regions | undefined;
    let lab: TargetLab | undefined;
    let fleet: RegionFleet | undefined;
    try {
      regions = await startRegions({ regions: specs, delay: args.delay, realtime: args.realtime, forwardPorts: [redis.port, ...args.forwardPort], log });
      // Node starts slowly on a busy machine: the lab and the fleet's processes start side by side,
      // and both are waited for before a failure counts, so that `finally` stops what did start.
      const startingLab = startTargetLab(regions).then((started) => (lab = started));
      const startingFleet = startRegionFleet({ regions, redisUrl: redis.url, workerArgs: args.workerArg, log }).then((started) => (fleet = started));
      await Promise.allSettled([startingLab, startingFleet]);
      const [startedLab, startedFleet] = await Promise.all([startingLab, startingFleet]);
      process.stdout.write(`Emulated regions\n${describeRegions(regions)}\n${describeFleet(redis, startedLab, startedFleet, regions)}\n`);
      process.exitCode = await startedFleet.run(args.plan, args.json ? ['--json', args.json] : []);
    } finally {
      process.stderr.write('demo: stopping the workers, the coordinator, the lab and Redis; removing the regions\n');
      await fleet?.close();
      await lab?.close();
      await regions?.close();
      await redis.stop();
      process.stderr.write(`demo: stopped and removed everything it started (${((Date.now() - startedAt) / 1000).toFixed(1)} s in all)\n`);
    }
  },
};
