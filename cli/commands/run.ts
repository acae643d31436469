// `probefleet run PLAN`: embedded (every job in this process, region `local`) unless a Redis
// URL is given (--redis, or REDIS_URL when the run starts no lab of its own with --lab): then the
// run is submitted as a flow to the regions' workers and waited for. Prints the report; --json
// writes the `probefleet.run/v1` document, --html, --markdown and --csv the report in those formats.
import { hostname } from 'node:os';
import { Registry } from 'prom-client';
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import type { ArgsOf } from '../options/args.js';
import { commandLogger } from '../../common/log.js';
import type { Lab } from '../../lab/index.js';
import { RUN_END_SLACK_SECONDS, runEndOf, waitForRunParts } from '../../coordinator/distributed-run.js';
import { EMBEDDED_REGION, runEmbedded } from '../../coordinator/embedded-runner.js';
import {
  jobsThatFit,
  completeRun,
  DEADLINE_SLACK_SECONDS,
  submitRun,
  type SubmittedRun,
} from '../../coordinator/flow.js';
import type { LoadedPlan } from '../../coordinator/loaded-plan.js';
import { loadPlanFile } from '../../coordinator/plan-loader.js';
import { withLabTargets } from '../../coordinator/lab-targets.js';
import { progressFor } from '../../coordinator/progress.js';
import { regionProgressFor } from '../../coordinator/region-progress.js';
import type { RunReport } from '../../contracts/result.js';
import { runIdSchema } from '../../contracts/job.js';
import { jobsPerRegionOf } from '../../contracts/run-job.js';
import { JOB_LIMITS } from '../../contracts/limits.js';
import { planSchema } from '../../contracts/plan.js';
import type { Logger } from '../../common/log.js';
import { redactRedisUrl } from '../../common/redis.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { outcomeOfParts, partsOf, type RunParts } from '../../coordinator/run-parts.js';
import { checkJobCount, newRunId, splitPlan, TooManyJobsError } from '../../coordinator/split.js';
import { PLAN_LIMITS } from '../../contracts/limits.js';
import { redisArgs, redisTimeoutArg, redisTimeoutMsOf, redisUrlFrom, redisUrlSourceNote } from '../options/redis.js';
import { withFleet } from '../options/fleet.js';
import { retentionArgs, retentionOf } from '../options/retention.js';
import { BadArgumentError } from '../../common/bad-input.js';
import { interruptible, printRunParts, printRunReport, reportFileArgs } from './report-files.js';
import { createJobMetrics } from '../../metrics/job-metrics.js';
import { MetricsPusher } from '../../metrics/pusher.js';
import { pushRunMetrics } from '../../metrics/run-metrics.js';
import { instanceArg, instanceOf, pushgatewayArgs, pushgatewaySettingsOf } from '../options/pushgateway.js';
import { targetPolicyArgs, targetPolicyOf } from '../options/target-policy.js';
import { labArgs, labAtOf, startRunLab } from '../options/lab.js';
import { maxJobsArgs, maxJobsOf } from '../options/max-jobs.js';
import { boundHeapGrowth } from '../../common/heap-growth.js';
import { breachedThresholdsLine, failedJobsLine, type RunOutcome, runOutcome } from '../../coordinator/run-outcome.js';
import { EXIT_CODES_HELP, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_THRESHOLD_BREACHED } from '../exit-codes.js';

const options = (y: Argv) =>
  labArgs(
    targetPolicyArgs(
      maxJobsArgs(
        reportFileArgs(instanceArg(pushgatewayArgs(retentionArgs(redisTimeoutArg(redisArgs(y)), ['reports'])))),
      ),
      true,
    ),
  )
    .positional('plan', { type: 'string', demandOption: true, describe: 'plan YAML file' })
    .option('json', {
      type: 'string',
      describe:
        'write the full run (probefleet.run/v1) to this file (- for stdout; the text report then goes to stderr)',
    })
    .option('run-id', {
      type: 'string',
      describe:
        "with --redis: the run's id (default: <plan>-<UTC time>-<random>); an existing id with the same plan adds nothing and shows that run, with another plan is refused (exit 2)",
    })
    .option('deadline', {
      type: 'number',
      describe: `with --redis: seconds after which jobs no worker took are reported as not run (default: jobs per region x jobTimeoutSeconds + ${DEADLINE_SLACK_SECONDS}); the command waits at most until then + jobTimeoutSeconds + ${RUN_END_SLACK_SECONDS}, Redis outages included`,
    })
    .option('jobs-per-batch', {
      type: 'number',
      describe: `with --redis: probe jobs per BullMQ job, 1-${JOB_LIMITS.jobsPerBatch} (default: 1 below 128 jobs in a region, more for bigger runs; docs/distributed.md, "Batches")`,
    })
    .option('detach', {
      type: 'boolean',
      default: false,
      describe: 'with --redis: submit the run, print its id and exit (probefleet runs show ID reads the report)',
    })
    .option('regions', {
      type: 'string',
      array: true,
      describe:
        "with --redis: the regions to run from, instead of the plan's own `regions` (probefleet demo passes its emulated ones)",
    });

type RunArgs = ArgumentsCamelCase<ArgsOf<typeof options>>;

export const runCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'run <plan>',
  describe: "Run a plan and print the report (embedded in this process, or with --redis on the regions' workers)",
  builder: (y) => options(y).epilog(EXIT_CODES_HELP),
  handler: async (args) => {
    const log = commandLogger('run');
    const loaded = await loadPlanFile(args.plan, { maxJobs: maxJobsOf(args) });
    if (args.lab && args.labAt !== undefined) throw new BadArgumentError('--lab and --lab-at exclude each other');
    if (args.labPort !== undefined && !args.lab) throw new BadArgumentError('--lab-port needs --lab');
    // A plan naming lab servers with no lab to point them at is bad input, before anything starts.
    if (!args.lab) labResolved(args, loaded, undefined);
    // --lab starts the lab in this process, on this machine's loopback, for an embedded run: a
    // REDIS_URL in the environment must not turn it into a submit to that Redis. --redis still does.
    const distributed = args.lab ? Boolean(args.redis) : redisUrlFrom(args) !== undefined;
    if (args.lab && !args.redis && process.env.REDIS_URL)
      process.stderr.write(
        'run: --lab runs embedded, in this process; REDIS_URL is set and not used (--redis URL runs it on the workers of that Redis)\n',
      );
    if (distributed) {
      for (const [given, option] of [
        [args.allowLoopback !== undefined, '--allow-loopback'],
        [args.allowTargets !== undefined, '--allow-targets'],
      ] as const) {
        if (given)
          throw new BadArgumentError(`${option} applies to embedded runs; with --redis each worker has its own`);
      }
      // This process only submits and waits: a big run's garbage must not take its RSS to 400 MB.
      boundHeapGrowth();
      return runDistributed(args, loaded, log);
    }
    return runInProcess(args, loaded, log);
  },
};

/** Runs every job in this process, as region `local` (embedded mode), and prints the report. */
async function runInProcess(args: RunArgs, loaded: LoadedPlan, log: Logger): Promise<void> {
  const targetPolicy = targetPolicyOf(args, true);
  for (const [given, option] of [
    [args.runId !== undefined, '--run-id'],
    [args.deadline !== undefined, '--deadline'],
    [args.jobsPerBatch !== undefined, '--jobs-per-batch'],
    [args.detach, '--detach'],
    [args.regions !== undefined, '--regions'],
  ] as const) {
    if (given) throw new BadArgumentError(`${option} needs --redis${args.lab ? '' : ' (or REDIS_URL)'}`);
  }
  const { plan } = loaded;
  try {
    const local = { ...loaded, plan: { ...plan, regions: [EMBEDDED_REGION] } };
    checkJobCount({ ...local, maxJobs: maxJobsOf(args, PLAN_LIMITS.embeddedJobsPerRun) });
  } catch (err) {
    if (!(err instanceof TooManyJobsError)) throw err;
    throw new TooManyJobsError(
      `${err.message}; a run in this process holds every result until its report is written: run it on workers with --redis`,
    );
  }
  if (plan.regions.some((r) => r !== EMBEDDED_REGION)) {
    log.warn(
      { regions: plan.regions },
      `embedded mode runs every job here, as region "${EMBEDDED_REGION}"; use --redis and workers for regions`,
    );
  }
  const runId = newRunId(plan.name);
  const pushgateway = pushgatewaySettingsOf(args);
  // Pushed as jobs finish and for the run, like a worker and a coordinator; never fails the run.
  const metrics = pushgateway
    ? createJobMetrics({ region: EMBEDDED_REGION, instance: instanceOf(args), pushgateway, log })
    : undefined;

  const { stop, files, written } = stopOnSigint(args, 'stopping the run: its report follows');
  await withRunLab(args, loaded, log, async (resolved) => {
    const jobs = splitPlan({ ...resolved, plan: { ...resolved.plan, regions: [EMBEDDED_REGION] } }, runId);
    const startedAt = new Date();
    const results = await runEmbedded(jobs, {
      log,
      progress: progressFor(),
      signal: stop,
      targetPolicy,
      onResult: (result) => metrics?.recordResult(result),
    });
    const report = buildRunReport({
      runId,
      mode: 'embedded',
      plan: resolved.plan,
      startedAt,
      finishedAt: new Date(),
      results,
    });
    await printRunReport(report, files, written);
    if (metrics?.pusher && !stop.aborted) {
      const pushed = await metrics.pushRun(report);
      await metrics.pusher.pushFailureCounts(instanceOf(args) ?? hostname(), { once: !pushed });
    }
    await metrics?.close();
    if (stop.aborted) process.exitCode = EXIT_INTERRUPTED;
    else exitOnFailedJobs(report);
  });
}

/**
 * The first Ctrl-C aborts `stop` and the report of what ran is still printed and written to
 * `files` (interruptible); a second quits at once. `stopping` is said at the first when given.
 */
function stopOnSigint(args: RunArgs, stopping?: string) {
  const stop = new AbortController();
  const files = { json: args.json, html: args.html, markdown: args.markdown, csv: args.csv };
  const { written } = interruptible(stop, files, stopping);
  return { stop: stop.signal, files, written };
}

/** Runs `run` on the plan with its `lab:` targets resolved: at the lab --lab starts for the run,
 * closed when `run` ends, or at the one --lab-at names. */
async function withRunLab<T>(
  args: RunArgs,
  loaded: LoadedPlan,
  log: Logger,
  run: (resolved: LoadedPlan) => Promise<T>,
): Promise<T> {
  const lab = args.lab ? await startRunLab(args.labPort, log) : undefined;
  try {
    return await run(labResolved(args, loaded, lab));
  } finally {
    await lab?.close();
  }
}

/** A run with a job that failed or has no result did not do what was asked: exit 1, and say why in
 * one line; otherwise a breached threshold exits 5, said the same way. */
function exitOnFailedJobs(report: RunReport): void {
  exitOn(report, runOutcome(report));
}

/** The exit code and its line: failed jobs (EXIT_FAILED) before breached thresholds. */
function exitOn(report: Pick<RunReport, 'runId' | 'thresholds'>, outcome: RunOutcome): void {
  const failed = failedJobsLine(outcome);
  const breached = breachedThresholdsLine(report);
  if (breached)
    process.stderr.write(`run ${report.runId}: ${breached}${failed ? '' : ` (exit ${EXIT_THRESHOLD_BREACHED})`}\n`);
  if (failed) process.stderr.write(`run ${report.runId}: ${failed} (exit ${EXIT_FAILED})\n`);
  if (failed) process.exitCode = EXIT_FAILED;
  else if (breached) process.exitCode = EXIT_THRESHOLD_BREACHED;
}

const LAB_HINT = 'run with --lab (starts one) or --lab-at HOST:PORT (one already running)';

/** The plan with its `lab:` targets at the lab this run started, or the one --lab-at names. */
function labResolved(args: RunArgs, loaded: LoadedPlan, lab: Lab | undefined): LoadedPlan {
  return withLabTargets(loaded, lab?.address ?? (args.labAt === undefined ? undefined : labAtOf(args.labAt)), LAB_HINT);
}

/** The plan with other regions than its own (--regions), checked as the plan's own would be. */
function withRegions(loaded: LoadedPlan, regions: string[]): LoadedPlan {
  const checked = planSchema.shape.regions.safeParse(regions);
  if (!checked.success) {
    const [issue] = checked.error.issues;
    const which = typeof issue.path[0] === 'number' ? ` "${regions[issue.path[0]]}"` : '';
    throw new BadArgumentError(`--regions:${which} ${issue.message}`);
  }
  const twice = regions.find((region, i) => regions.indexOf(region) !== i);
  if (twice) throw new BadArgumentError(`--regions: "${twice}" is listed twice`);
  const moved = { ...loaded, plan: { ...loaded.plan, regions: checked.data } };
  checkJobCount(moved); // before anything connects to Redis
  return moved;
}

/** Submits the plan as a flow and waits for the regions' workers; the report is the stored one.
 * Bounded whatever Redis does: --redis-timeout to connect, the run's end (runEndOf) to wait. */
async function runDistributed(args: RunArgs, given: LoadedPlan, log: Logger): Promise<void> {
  const withOwnRegions = args.regions ? withRegions(given, args.regions) : given;
  if (args.runId !== undefined && !runIdSchema.safeParse(args.runId).success) {
    throw new BadArgumentError(
      `--run-id: "${args.runId}" is not a run id (a-z, 0-9, ".", "_", "-"; starting with a letter or digit)`,
    );
  }
  if (args.deadline !== undefined && !(args.deadline >= 1))
    throw new BadArgumentError(`--deadline must be at least 1 second (got ${args.deadline})`);
  if (
    args.jobsPerBatch !== undefined &&
    !(Number.isInteger(args.jobsPerBatch) && args.jobsPerBatch >= 1 && args.jobsPerBatch <= JOB_LIMITS.jobsPerBatch)
  )
    throw new BadArgumentError(
      `--jobs-per-batch must be a whole number from 1 to ${JOB_LIMITS.jobsPerBatch} (got ${args.jobsPerBatch})`,
    );
  const pushgateway = pushgatewaySettingsOf(args);
  const retention = retentionOf(args);
  const { stop, files, written } = stopOnSigint(args);
  await withRunLab(args, withOwnRegions, log, async (loaded) => {
    const runId = args.runId ?? newRunId(loaded.plan.name);
    const batching = {
      ...(args.deadline !== undefined ? { deadlineSeconds: args.deadline } : {}),
      ...(args.jobsPerBatch !== undefined ? { jobsPerBatch: args.jobsPerBatch } : {}),
    };
    const jobs = jobsThatFit(loaded, runId, batching); // before anything connects to Redis
    await withFleet(
      args,
      log,
      async (fleet): Promise<void> => {
        const where = `${redactRedisUrl(fleet.redis.url)}${redisUrlSourceNote(args)} (prefix ${fleet.prefix})`;
        const say = (line: string) => process.stderr.write(`${line}\n`);
        let writing = false;
        let submitted: SubmittedRun;
        try {
          submitted = await submitRun(fleet, loaded, runId, {
            ...batching,
            jobs,
            // Named before anything is written: a submit cut off is completed with this id.
            beforeWrite: () => {
              writing = true;
              say(`run ${runId}: submitting to ${where}`);
            },
          });
        } catch (err) {
          if (writing && err instanceof Error)
            err.message += `; run ${runId} may be in Redis in part: the same command with --run-id ${runId} completes it`;
          throw err;
        }
        if (submitted.report) {
          say(`run ${runId} is over (same plan: nothing added); its report as stored in ${where}`);
          if (args.detach) process.stdout.write(`${runId}\n`);
          if (!args.detach) await show(partsOf(submitted.report));
          return;
        }
        const { completion } = submitted;
        const regions = [...jobsPerRegionOf(submitted.data)].map(([region, n]) => `${region} ${n}`).join(', ');
        const what = submitted.added
          ? `run ${runId} submitted to ${where}`
          : completion.added > 0
            ? `completed run ${runId}: added ${completion.added} of ${completion.batches} batches to ${where}`
            : `run ${runId} already submitted: nothing added to ${where}`;
        say(
          `${what}; jobs per region: ${regions}; ${submitted.data.jobsPerBatch} per BullMQ job; deadline ${submitted.data.deadline}; waiting until ${runEndOf(submitted.data).toISOString()} at most`,
        );
        if (completion.unconfirmed) {
          const { acked, replicas, waitedMs } = completion.unconfirmed;
          say(
            `run ${runId}: Redis's replicas did not confirm its jobs in time (${acked} of ${replicas} within ${waitedMs / 1000} s): a failover now could lose some; ${args.detach ? `the same command with --run-id ${runId} adds them again` : 'this command adds them again if it does'}`,
          );
        }
        if (args.detach) {
          process.stdout.write(`${runId}\n`);
          return undefined;
        }
        const waited = await waitForRunParts(fleet, submitted.data, {
          log,
          progress: regionProgressFor(jobsPerRegionOf(submitted.data)),
          signal: stop,
          notice: say,
          repair: () => completeRun(fleet, submitted.data, submitted.jobs),
          storeWithinMs: redisTimeoutMsOf(args),
        });
        if (!waited) {
          say(`stopped waiting; the run goes on in the fleet: probefleet runs show ${runId}`);
          process.exitCode = EXIT_INTERRUPTED;
          return;
        }
        await show(waited);
      },
      { retention },
    );
  });

  /** The run's report, metrics and exit code; while the fleet is open, since a big run's results
   * are read from the store a page at a time. */
  async function show(run: RunParts): Promise<void> {
    await printRunParts(run, files, written);
    // The workers pushed their jobs' metrics; the run's last-run groups come from whoever finishes it.
    if (pushgateway) {
      const pusher = new MetricsPusher(pushgateway, log, new Registry());
      const pushed = await pushRunMetrics(pusher, run, log);
      await pusher.pushFailureCounts(instanceOf(args) ?? hostname(), { once: !pushed });
      await pusher.close();
    }
    exitOn(run.head, await outcomeOfParts(run));
  }
}
