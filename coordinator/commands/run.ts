// `probefleet run PLAN`: embedded (every job in this process, region `local`) unless a Redis
// URL is given. Prints the report; --json writes the `probefleet.run/v1` document.
import { randomBytes } from 'node:crypto';
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from './args.js';
import { createLogger } from '../../common/log.js';
import { writeFileAtomic } from '../../common/write-file-atomic.js';
import { DEFAULT_LAB_PORT, startLab, type Lab } from '../../lab/index.js';
import { EMBEDDED_REGION, runEmbedded } from '../embedded-runner.js';
import { loadPlanFile } from '../plan-loader.js';
import { progressFor } from '../progress.js';
import { renderRunReport } from '../report/text.js';
import { buildRunReport } from '../run-report.js';
import { runIdFor, splitPlan } from '../split.js';

const options = (y: Argv) =>
  y
    .positional('plan', { type: 'string', demandOption: true, describe: 'plan YAML file' })
    .option('json', { type: 'string', describe: 'write the full run (probefleet.run/v1) to this file' })
    .option('lab', { type: 'boolean', default: false, describe: 'start the lab target for the duration of the run' })
    .option('lab-port', { type: 'number', default: DEFAULT_LAB_PORT, describe: 'first port of the lab target with --lab' });

export const runCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'run <plan>',
  describe: 'Run a plan and print the report (embedded: in this process, no Redis needed)',
  builder: options,
  handler: async (args) => {
    const log = createLogger('run', process.env.PROBEFLEET_LOG_LEVEL ?? 'warn');
    const loaded = await loadPlanFile(args.plan);
    const { plan } = loaded;
    if (plan.regions.some((r) => r !== EMBEDDED_REGION)) {
      log.warn({ regions: plan.regions }, `embedded mode runs every job here, as region "${EMBEDDED_REGION}"; use --redis and workers for regions`);
    }
    const runId = runIdFor(plan.name, new Date(), randomBytes(2).toString('hex'));
    const jobs = splitPlan({ ...loaded, plan: { ...plan, regions: [EMBEDDED_REGION] } }, runId);

    const stop = new AbortController();
    const interrupt = () => stop.abort();
    process.once('SIGINT', interrupt);
    let lab: Lab | undefined;
    try {
      if (args.lab) lab = await startLab({ basePort: args.labPort, log });
      const startedAt = new Date();
      const results = await runEmbedded(jobs, { log, progress: progressFor(), signal: stop.signal });
      const report = buildRunReport({ runId, mode: 'embedded', plan, startedAt, finishedAt: new Date(), results });
      process.stdout.write(renderRunReport(report));
      if (args.json) await writeFileAtomic(args.json, `${JSON.stringify(report, null, 2)}\n`);
      if (stop.signal.aborted) process.exitCode = 130;
    } finally {
      process.off('SIGINT', interrupt);
      await lab?.close();
    }
  },
};
