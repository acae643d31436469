// `probefleet plan validate|expand FILE`: check a plan, and show the jobs it makes.
// The plan's schemas, its loader and the YAML parser are loaded by the subcommands that use them:
// `plan schema` reads no plan.
import type { Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { renderTable } from '../../coordinator/report/table.js';
import { redactTarget } from '../../contracts/secrets.js';
import { withLabTargets } from '../../coordinator/lab-targets.js';
import type { LoadedPlan } from '../../coordinator/loaded-plan.js';
import { printableJsonText } from '../../common/printable.js';
import { DEFAULT_LAB_PORT, labAddressAt } from '../../contracts/lab-roles.js';
import { labAtArg, labAtOf } from '../options/lab.js';
import { maxJobsArgs, maxJobsOf } from '../options/max-jobs.js';
import { PLAN_LIMITS } from '../../contracts/limits.js';
import { plural, thousands } from '../../common/plural.js';

const fileArg = (y: Argv) =>
  maxJobsArgs(y).positional('file', { type: 'string', demandOption: true, describe: 'plan YAML file' });
const expandOptions = (y: Argv) =>
  labAtArg(fileArg(y))
    .option('run-id', { type: 'string', describe: 'run id to expand for (default: <plan>-preview)' })
    .option('json', { type: 'boolean', describe: 'print the job payloads as JSON, one per line' });

/** Lab targets at `--lab-at`, else where `probefleet lab` puts them by default (job ids do not depend on it). */
function atDefaultLab(loaded: LoadedPlan, labAt?: string): LoadedPlan {
  const lab = labAt === undefined ? labAddressAt('127.0.0.1', DEFAULT_LAB_PORT) : labAtOf(labAt);
  return withLabTargets(loaded, lab, '');
}

const validate: CommandModule<object, ArgsOf<typeof fileArg>> = {
  command: 'validate <file>',
  describe: 'Check a plan; print every problem with file:line:column and field (exit 2)',
  builder: fileArg,
  handler: async (args) => {
    const { file } = args;
    const [{ loadPlanFile }, { countJobs }] = await Promise.all([
      import('../../coordinator/plan-loader.js'),
      import('../../coordinator/split.js'),
    ]);
    // Counted, not made: a plan's jobs (lab targets wherever the lab is) are known without splitting it.
    const { plan } = await loadPlanFile(file, { maxJobs: maxJobsOf(args) });
    const fromFiles = plan.targets.filter((t) => t.file !== undefined);
    const files = new Set(fromFiles.map((t) => t.file)).size;
    process.stdout.write(
      `${file}: plan "${plan.name}" is valid: ${plural(plan.targets.length, 'target')}` +
        `${plan.targetFiles ? ` (${thousands(fromFiles.length)} from ${plural(files, 'target file')})` : ''}, ${plural(plan.experiments.length, 'experiment')}, ` +
        `${plural(plan.regions.length, 'region')} (${plan.regions.join(', ')}), ${plural(countJobs(plan).total, 'job')} per run` +
        `${plan.schedule ? `, scheduled "${plan.schedule.cron}" ${plan.schedule.tz}` : ''}\n`,
    );
    // A run without Redis makes the jobs of one region, and holds them all in this process.
    const embedded = countJobs({ ...plan, regions: ['local'] }).total;
    const embeddedLimit = maxJobsOf(args, PLAN_LIMITS.embeddedJobsPerRun);
    if (embedded > embeddedLimit)
      process.stdout.write(
        `${file}: run without --redis, it makes ${plural(embedded, 'job')}, over the ${thousands(embeddedLimit)} one process takes (--max-jobs raises it; --redis runs it on workers)\n`,
      );
  },
};

const expand: CommandModule<object, ArgsOf<typeof expandOptions>> = {
  command: 'expand <file>',
  describe: 'Print the jobs a run of the plan makes, with their deterministic ids',
  builder: expandOptions,
  handler: async (args) => {
    const { file, runId, json, labAt } = args;
    const [{ loadPlanFile }, { splitPlan }] = await Promise.all([
      import('../../coordinator/plan-loader.js'),
      import('../../coordinator/split.js'),
    ]);
    const loaded = await loadPlanFile(file, { maxJobs: maxJobsOf(args) });
    const jobs = splitPlan(atDefaultLab(loaded, labAt), runId ?? `${loaded.plan.name}-preview`);
    if (json) {
      process.stdout.write(
        `${jobs.map((j) => printableJsonText({ ...j, target: redactTarget(j.target) })).join('\n')}\n`,
      );
      return;
    }
    process.stdout.write(
      `${renderTable(
        ['job id', 'region', 'target', 'probe', 'variant'],
        jobs.map((j) => [j.jobId, j.region, j.target.name, j.probe, JSON.stringify(j.variant)]),
        'lllll',
      )}\n${plural(jobs.length, 'job')}\n`,
    );
  },
};

const schema: CommandModule = {
  command: 'schema',
  describe: 'Print the plan JSON Schema (for editors; committed as contracts/plan.schema.json)',
  handler: async () => {
    const { planJsonSchema } = await import('../../contracts/plan-json-schema.js');
    process.stdout.write(`${JSON.stringify(planJsonSchema(), null, 2)}\n`);
  },
};

export const planCommand: CommandModule = {
  command: 'plan',
  describe: 'Validate a plan, show the jobs it makes, or print its JSON Schema',
  builder: (y) =>
    y
      .command(validate)
      .command(expand)
      .command(schema)
      .demandCommand(1, 'plan needs a subcommand: validate, expand or schema'),
  handler: () => {},
};
