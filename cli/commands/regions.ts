// `probefleet regions run|up|cleanup`: emulated regions on this machine (regions/): network
// namespaces with a real round-trip time to a target host running the lab. Needs root.
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { commandLogger } from '../../common/log.js';
import { printable } from '../../common/printable.js';
import { cleanupStaleRegions } from '../../regions/cleanup.js';
import { runPlanInRegions } from '../../regions/fleet-run.js';
import {
  DEFAULT_LINK_SEED,
  hasLossOrJitter,
  startRegions,
  validateRegionSpecs,
  type RegionSpec,
  type Regions,
  type RegionsOptions,
} from '../../regions/harness.js';
import { checkRegionsSupported } from '../../regions/preflight.js';
import { formatLoss, formatRate, formatRtt, parseRegionSpec, REGION_SPEC_SYNTAX } from '../../regions/region-spec.js';
import { startTargetLab, type TargetLab } from '../../regions/target-lab.js';
import { loadPlanFile } from '../../coordinator/plan-loader.js';
import { withLabTargets } from '../../coordinator/lab-targets.js';
import { renderTable } from '../../coordinator/report/table.js';
import { newRunId } from '../../coordinator/split.js';
import { printRunReport, reportFileArgs } from './report-files.js';
import { maxJobsArgs, maxJobsOf } from '../options/max-jobs.js';
import { EXIT_BAD_INPUT } from '../exit-codes.js';
import { plural } from '../../common/plural.js';

/** Three clean links and a lossy, jittery one (its seed: DEFAULT_LINK_SEED). */
export const DEFAULT_REGIONS = ['eu-west=20ms', 'us-east=80ms', 'ap-south=160ms', 'sa-east=120ms,loss=2%,jitter=10ms'];

export const regionOptions = (y: Argv) =>
  y
    .option('region', {
      type: 'string',
      array: true,
      default: DEFAULT_REGIONS,
      describe: `an emulated region, ${REGION_SPEC_SYNTAX} (e.g. eu-west=20ms, ap-south=160ms,1MB/s, sa-east=120ms,loss=2%,jitter=10ms, dual=20ms,v6=35ms: IPv6 with its own RTT); repeat for more`,
    })
    .option('delay', {
      choices: ['auto', 'netem', 'nfqueue'] as const,
      default: 'auto' as const,
      describe: 'how to add delay: netem where the kernel has it, else an NFQUEUE helper',
    })
    .option('realtime', {
      type: 'boolean',
      default: true,
      describe:
        'run the lab and the probes at a real-time priority, so other work on this machine does not show as network time (--no-realtime: ordinary priority)',
    });

const runOptions = (y: Argv) =>
  maxJobsArgs(reportFileArgs(regionOptions(y)))
    .positional('plan', {
      type: 'string',
      demandOption: true,
      describe:
        'plan YAML file; its targets name lab servers (lab:keepalive/) or point at the target host, 10.77.0.1 or [fd77::1]',
    })
    .option('json', { type: 'string', describe: 'write the full run (probefleet.run/v1) to this file' });

const upOptions = (y: Argv) =>
  regionOptions(y)
    .option('lab', {
      type: 'boolean',
      default: true,
      describe: 'start the lab target on the target host (--no-lab: leave it empty)',
    })
    .option('forward-port', {
      type: 'number',
      array: true,
      default: [6379],
      describe: 'TCP ports of 127.0.0.1 here that the regions reach at their own 127.0.0.1, without delay (Redis)',
    });

/** Region specs from the command line, or undefined after reporting bad input (exit 2). */
export function regionSpecs(texts: string[], delay: RegionsOptions['delay']): RegionSpec[] | undefined {
  try {
    const specs = texts.map(parseRegionSpec);
    validateRegionSpecs(specs, delay);
    return specs;
  } catch (err) {
    process.stderr.write(`probefleet: --region: ${printable((err as Error).message)}\n`);
    process.exitCode = EXIT_BAD_INPUT;
    return undefined;
  }
}

export function describeRegions(regions: Regions): string {
  return (
    `${renderTable(
      ['region', 'RTT to target', 'rate limit', 'loss up / down', 'jitter', 'seed', 'namespace', 'address'],
      regions.regions.map((r) => [
        r.name,
        formatRtt(r),
        formatRate(r.rateBytesPerSecond),
        formatLoss(r.lossPercent),
        r.jitterMs ? `± ${r.jitterMs} ms` : '-',
        hasLossOrJitter(r) ? String(r.seed ?? DEFAULT_LINK_SEED) : '-',
        r.namespace,
        r.address,
      ]),
      'lrrrrrll',
    )}\ntarget host ${regions.target.address} in namespace ${regions.target.namespace}; delay added by ${regions.delay}` +
    `${regions.realtime ? '' : '; measured processes at ordinary priority'}\n`
  );
}

const run: CommandModule<object, ArgsOf<typeof runOptions>> = {
  command: 'run <plan>',
  describe:
    'Bring up emulated regions, run the plan from each of them against the lab on the target host, print the report, tear down',
  builder: runOptions,
  handler: async (args) => {
    const log = commandLogger('regions');
    const loaded = await loadPlanFile(args.plan, { maxJobs: maxJobsOf(args) });
    const specs = regionSpecs(args.region, args.delay);
    if (!specs) return;
    const regions = await startRegions({ regions: specs, delay: args.delay, realtime: args.realtime, log });
    let lab: TargetLab | undefined;
    try {
      lab = await startTargetLab(regions);
      process.stdout.write(`Emulated regions\n${describeRegions(regions)}\n`);
      const report = await runPlanInRegions(regions, withLabTargets(loaded, lab.address, ''), {
        runId: newRunId(loaded.plan.name),
        log,
        onRegion: (region, jobs) =>
          process.stderr.write(`region ${region.name} (RTT ${formatRtt(region)}): ${plural(jobs, 'job')}\n`),
      });
      await printRunReport(report, { json: args.json, html: args.html, markdown: args.markdown, csv: args.csv });
    } finally {
      await lab?.close();
      await regions.close();
    }
  },
};

const up: CommandModule<object, ArgsOf<typeof upOptions>> = {
  command: 'up',
  describe: 'Bring up emulated regions (and the lab on the target host) until Ctrl-C, to explore with ip netns exec',
  builder: upOptions,
  handler: async (args) => {
    const log = commandLogger('regions');
    const specs = regionSpecs(args.region, args.delay);
    if (!specs) return;
    const regions = await startRegions({
      regions: specs,
      delay: args.delay,
      realtime: args.realtime,
      forwardPorts: args.forwardPort,
      log,
    });
    let lab: TargetLab | undefined;
    try {
      if (args.lab) lab = await startTargetLab(regions);
      const first = regions.regions[0];
      const lines = [`Emulated regions\n${describeRegions(regions)}`];
      if (lab) {
        const { serversV6 } = lab;
        lines.push(
          renderTable(
            ['lab server', 'url (from every region)', 'over IPv6'],
            Object.entries(lab.servers).map(([name, url]) => [name, url, serversV6[name as keyof typeof serversV6]]),
            'lll',
          ),
          `lab CA certificate: ${lab.caFile}`,
          '',
          'Try:',
          `  ip netns exec ${first.namespace} curl -s -o /dev/null -w 'connect %{time_connect} s, total %{time_total} s\\n' ${lab.servers.keepalive}/`,
          `  ip netns exec ${first.namespace} curl -s -o /dev/null -w 'connect %{time_connect} s, total %{time_total} s\\n' '${lab.serversV6.keepalive}/'`,
          `  ip netns exec ${first.namespace} npx probefleet run examples/regions-reuse.yaml --lab-at ${lab.at}`,
        );
      }
      if (regions.forwardPorts.length > 0)
        lines.push(
          `Ports ${regions.forwardPorts.join(', ')} of 127.0.0.1 here answer at 127.0.0.1 in every region, without delay.`,
        );
      lines.push('Ctrl-C removes everything.');
      process.stdout.write(`${lines.join('\n')}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
    } finally {
      await lab?.close();
      await regions.close();
    }
  },
};

const cleanup: CommandModule = {
  command: 'cleanup',
  describe: 'Remove emulated regions left behind by runs that were killed (runs remove their own otherwise)',
  handler: () => {
    checkRegionsSupported();
    const removed = cleanupStaleRegions(commandLogger('regions'));
    process.stdout.write(
      removed.length > 0
        ? `removed the leftovers of ${removed.length} run(s): ${removed.join(', ')}\n`
        : 'nothing to remove\n',
    );
  },
};

export const regionsCommand: CommandModule = {
  command: 'regions',
  describe: 'Emulated regions on this machine (network namespaces with real round-trip times; needs root)',
  builder: (y) =>
    y.command(run).command(up).command(cleanup).demandCommand(1, 'regions needs a subcommand: run, up or cleanup'),
  handler: () => {},
};
