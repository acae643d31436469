// `probefleet demo`: a whole fleet on one machine. Emulated regions (regions/harness.ts; default
// three with different round-trip times), a redis-server of its own on a free port, the lab on
// the target host, a coordinator and one real worker process per region inside that region's
// namespace (regions/region-fleet.ts), and a Pushgateway and Prometheus when they are installed
// (regions/fleet-metrics.ts); then `probefleet run PLAN --redis` across the regions, its report,
// what Prometheus holds of it, and everything torn down again, also after a failure or Ctrl-C.
// Needs root.
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { commandLogger } from '../../common/log.js';
import { freeLoopbackPort } from '../../common/redis-server.js';
import { startRegions, type Regions } from '../../regions/harness.js';
import { checkRegionsSupported, RegionsUnavailableError } from '../../regions/preflight.js';
import { startFleetRedis, startRegionFleet, type FleetRedis, type RegionFleet } from '../../regions/region-fleet.js';
import { runDirFor } from '../../regions/cleanup.js';
import { fleetMetricsMissing, startFleetMetrics, type FleetMetrics } from '../../regions/fleet-metrics.js';
import { hasCommand } from '../../regions/system.js';
import { startTargetLab, type TargetLab } from '../../regions/target-lab.js';
import type { LoadedPlan } from '../../coordinator/loaded-plan.js';
import { loadPlanFile } from '../../coordinator/plan-loader.js';
import { renderTable } from '../../coordinator/report/table.js';
import { splitPlan } from '../../coordinator/split.js';
import { withLabTargets } from '../../coordinator/lab-targets.js';
import { describeRegions, regionOptions, regionSpecs } from './regions.js';
import { maxJobsOf } from '../options/max-jobs.js';

export const DEMO_PLAN = fileURLToPath(new URL('../../../examples/regions-demo.yaml', import.meta.url));

const options = (y: Argv) =>
  regionOptions(y)
    .positional('plan', {
      type: 'string',
      default: DEMO_PLAN,
      defaultDescription: 'examples/regions-demo.yaml',
      describe:
        'plan YAML file; its targets name lab servers (lab:keepalive/) or point at the target host, 10.77.0.1 or [fd77::1]',
    })
    .option('json', { type: 'string', describe: 'write the full run (probefleet.run/v1) to this file' })
    .option('forward-port', {
      type: 'number',
      array: true,
      default: [] as number[],
      describe:
        "more TCP ports of 127.0.0.1 here that the regions reach at their own 127.0.0.1 (the fleet's Redis is always forwarded)",
    })
    .option('worker-arg', {
      type: 'string',
      array: true,
      default: [] as string[],
      describe: 'an extra option for every worker, e.g. --worker-arg=--concurrency=2; repeat for more',
    })
    .option('metrics', {
      type: 'boolean',
      default: true,
      describe: 'a Pushgateway and Prometheus for the fleet, when installed (--no-metrics: none)',
    })
    .option('keep-up', {
      type: 'boolean',
      default: false,
      describe: 'after the report, keep everything (regions, fleet, Prometheus, Pushgateway) up until Enter or Ctrl-C',
    });

function describeFleet(
  redis: FleetRedis,
  lab: TargetLab,
  fleet: RegionFleet,
  regions: Regions,
  metrics: FleetMetrics | undefined,
): string {
  const ports = Object.values(lab.servers).map((url) => Number(new URL(url).port));
  const rows = [
    [
      'redis-server',
      String(redis.pid),
      'this machine',
      `${redis.url} (the same address in every region, without delay)`,
    ],
    ...(metrics
      ? [
          [
            'pushgateway',
            String(metrics.pushgateway.pid),
            'this machine',
            `${metrics.pushgateway.url} (the same address in every region, without delay)`,
          ],
          [
            'prometheus',
            String(metrics.prometheus.pid),
            'this machine',
            `${metrics.prometheus.url} (scrapes the Pushgateway every second)`,
          ],
        ]
      : []),
    [
      'lab target',
      '-',
      regions.target.namespace,
      `${regions.target.address}, ports ${Math.min(...ports)}-${Math.max(...ports)}`,
    ],
    ...fleet.processes.map((p) => [
      p.what,
      String(p.pid),
      p.namespace ?? 'this machine',
      p.what === 'coordinator' ? fleet.metricsUrl : '',
    ]),
  ];
  const whileItRuns = metrics
    ? `while it runs: ${metrics.prometheus.url}/graph (try probefleet_new_connection_cost_seconds), ${metrics.pushgateway.url} (the pushed groups); --keep-up keeps them after the report\n`
    : '';
  return `Fleet (every process is stopped when the demo ends)\n${renderTable(['process', 'pid', 'runs in', 'address'], rows, 'lrll')}\nlab CA certificate: ${lab.caFile}\n${whileItRuns}`;
}

/** Resolves on Enter, or when stdin ends. Ctrl-C ends the demo as it does mid-run: the regions'
 * handlers remove the namespaces and every process tied to the demo dies with it. */
async function untilEnter(): Promise<void> {
  const lines = createInterface({ input: process.stdin });
  await new Promise<void>((resolve) => {
    lines.once('line', () => resolve());
    lines.once('close', () => resolve());
  });
  lines.close();
}

/** Emulated regions, and the demo's own Redis and setpriv (to tie every process it starts to itself). */
function checkDemoSupported(): void {
  checkRegionsSupported();
  const missing = [
    ['redis-server', 'redis-server'],
    ['setpriv', 'util-linux'],
  ].filter(([command]) => !hasCommand(command));
  if (missing.length > 0) {
    throw new RegionsUnavailableError(
      `the demo needs ${missing.map(([c]) => c).join(' and ')}: apt-get install ${missing.map(([, p]) => p).join(' ')}`,
    );
  }
}

/** The run's numbers per region, read back from Prometheus once every region's jobs are in. */
function regionalComparison(
  loaded: LoadedPlan,
  built: Regions,
  lab: TargetLab,
  metrics: FleetMetrics,
): Promise<string> {
  const names = built.regions.map((r) => r.name);
  const resolved = withLabTargets(loaded, lab.address, '');
  const jobs = splitPlan({ ...resolved, plan: { ...resolved.plan, regions: names } }, 'demo');
  const jobsPerRegion = new Map(names.map((name) => [name, jobs.filter((job) => job.region === name).length]));
  return metrics.regionalComparison(loaded.plan.name, jobsPerRegion);
}

export const demoCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'demo [plan]',
  describe:
    'A fleet on this machine: emulated regions, Redis, a coordinator and a worker per region; runs a plan across the regions, prints the comparison, tears down (root)',
  builder: options,
  handler: async (args) => {
    const log = commandLogger('demo');
    // A bad plan is bad input (exit 2), before anything is built; the run's `probefleet run` reads PROBEFLEET_MAX_JOBS too.
    const loaded = await loadPlanFile(args.plan, { maxJobs: maxJobsOf({}) });
    const specs = regionSpecs(args.region, args.delay);
    if (!specs) return;
    checkDemoSupported();

    const metricsMissing = args.metrics ? fleetMetricsMissing() : 'not asked for (--no-metrics)';
    if (metricsMissing)
      process.stderr.write(`demo: no Pushgateway and Prometheus: ${metricsMissing}; running without metrics\n`);

    const startedAt = Date.now();
    const redis = await startFleetRedis();
    let regions: Regions | undefined;
    let lab: TargetLab | undefined;
    let fleet: RegionFleet | undefined;
    let metrics: FleetMetrics | undefined;
    try {
      const pushgatewayPort = metricsMissing ? undefined : await freeLoopbackPort();
      const forwardPorts = [redis.port, ...(pushgatewayPort ? [pushgatewayPort] : []), ...args.forwardPort];
      const built = await startRegions({
        regions: specs,
        delay: args.delay,
        realtime: args.realtime,
        forwardPorts,
        log,
      });
      regions = built;
      // Node starts slowly on a busy machine: the lab, the fleet's processes and the metrics start
      // side by side, and all are waited for before a failure counts, so that `finally` stops what did start.
      const pushgatewayUrl = pushgatewayPort ? `http://127.0.0.1:${pushgatewayPort}` : undefined;
      const startingLab = startTargetLab(built).then((started) => (lab = started));
      const startingFleet = startRegionFleet({
        regions: built,
        redisUrl: redis.url,
        workerArgs: args.workerArg,
        pushgatewayUrl,
        log,
      }).then((started) => (fleet = started));
      const startingMetrics = pushgatewayPort
        ? startFleetMetrics({ pushgatewayPort, parentDir: runDirFor(built.id) }).then((started) => (metrics = started))
        : Promise.resolve(undefined);
      await Promise.allSettled([startingLab, startingFleet, startingMetrics]);
      const [startedLab, startedFleet, startedMetrics] = await Promise.all([
        startingLab,
        startingFleet,
        startingMetrics,
      ]);
      process.stdout.write(
        `Emulated regions\n${describeRegions(built)}\n${describeFleet(redis, startedLab, startedFleet, built, startedMetrics)}\n`,
      );
      process.exitCode = await startedFleet.run(args.plan, [
        '--lab-at',
        startedLab.at,
        ...(args.json ? ['--json', args.json] : []),
      ]);
      // After a failed run the wait for every region's numbers would only time out.
      if (startedMetrics && process.exitCode === 0)
        process.stdout.write(`\n${await regionalComparison(loaded, built, startedLab, startedMetrics)}`);
      if (args.keepUp) {
        process.stderr.write(
          `demo: everything stays up${startedMetrics ? ` (Prometheus ${startedMetrics.prometheus.url})` : ''}; press Enter (or Ctrl-C) to stop and remove it\n`,
        );
        await untilEnter();
      }
    } finally {
      process.stderr.write(
        `demo: stopping the workers, the coordinator, the lab${metrics ? ', Prometheus, the Pushgateway' : ''} and Redis; removing the regions\n`,
      );
      await fleet?.close();
      await metrics?.close();
      await lab?.close();
      await regions?.close();
      await redis.stop();
      process.stderr.write(
        `demo: stopped and removed everything it started (${((Date.now() - startedAt) / 1000).toFixed(1)} s in all)\n`,
      );
    }
  },
};
