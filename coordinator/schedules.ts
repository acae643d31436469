// Nightly (or any cron) runs as BullMQ job schedulers on the runs queue, one per plan name:
// adding a plan's schedule again replaces it. When one fires, the coordinator submits a run.
import { scheduleSchema } from '../contracts/plan.js';
import { JOB_NAMES } from '../contracts/queues.js';
import { SCHEDULED_RUN_SCHEMA, scheduledRunDataSchema, type ScheduledRunData } from '../contracts/run-job.js';
import { formatIssuePath } from '../common/issue-path.js';
import { signData } from '../common/job-signature.js';
import type { LabAddress } from '../contracts/lab-roles.js';
import { printable } from '../common/printable.js';
import { plural } from '../common/plural.js';
import type { Fleet } from './fleet.js';
import { withLabTargets } from './lab-targets.js';
import type { LoadedPlan } from './loaded-plan.js';
import { listSchedules, type ScheduleInfo } from './schedule-list.js';
import { summaryOf } from './schedule-summary.js';

export class ScheduleError extends Error {
  override name = 'ScheduleError';
}

/** When a plan runs: a cron expression in a time zone, or a fixed interval. */
export type ScheduleSpec = { cron: string; tz: string } | { everyMs: number };

/** The schedule from the command line, else from the plan's `schedule:`; checked like the plan's. */
export function scheduleSpecFor(
  loaded: LoadedPlan,
  options: { cron?: string; tz?: string; everySeconds?: number },
): ScheduleSpec {
  if (options.everySeconds !== undefined) {
    if (options.cron) throw new ScheduleError('give --cron or --every, not both');
    // Run ids have a resolution of one second: two firings in one second would be one run.
    if (!(options.everySeconds >= 1))
      throw new ScheduleError(`--every must be at least 1 second (got ${options.everySeconds})`);
    return { everyMs: Math.round(options.everySeconds * 1000) };
  }
  const cron = options.cron ?? loaded.plan.schedule?.cron;
  if (!cron)
    throw new ScheduleError(
      `${loaded.file}: the plan has no schedule; give --cron "0 2 * * *" (and --tz) or --every SECONDS`,
    );
  const parsed = scheduleSchema.safeParse({ cron, tz: options.tz ?? loaded.plan.schedule?.tz ?? 'UTC' });
  if (!parsed.success) {
    throw new ScheduleError(
      parsed.error.issues
        .map((i) => `${formatIssuePath(i.path) === 'tz' ? '--tz' : '--cron'}: ${i.message}`)
        .join('; '),
    );
  }
  return parsed.data;
}

export async function addSchedule(
  fleet: Fleet,
  loaded: LoadedPlan,
  spec: ScheduleSpec,
  deadlineSeconds?: number,
): Promise<ScheduleInfo> {
  // Targets from files are read again at each firing: the schedule keeps where, not their TLS settings each.
  const fromFiles = new Set(loaded.plan.targets.filter((t) => t.file !== undefined).map((t) => t.name));
  const data: ScheduledRunData = {
    schema: SCHEDULED_RUN_SCHEMA,
    plan: loaded.plan,
    tls: Object.fromEntries(
      Object.entries(loaded.tls).filter(([name, tls]) => tls !== undefined && !fromFiles.has(name)),
    ) as ScheduledRunData['tls'],
    ...(deadlineSeconds ? { deadlineSeconds } : {}),
    summary: summaryOf(loaded.plan),
    ...(loaded.targetFiles
      ? { targetFiles: { ...loaded.targetFiles, ...(loaded.lab ? { lab: loaded.lab } : {}) } }
      : {}),
  };
  scheduledRunDataSchema.parse(data);
  const name = loaded.plan.name;
  await fleet.runs.upsertJobScheduler(
    name,
    'everyMs' in spec ? { every: spec.everyMs } : { pattern: spec.cron, tz: spec.tz },
    // How long a fired schedule's record is kept is the coordinator's to say (contracts/retention.ts).
    { name: JOB_NAMES.scheduledRun, data: signData(data, fleet.jobKey) },
  );
  const info = (await listSchedules(fleet)).find((s) => s.name === name);
  if (!info) throw new ScheduleError(`schedule "${name}" was added but cannot be read back`);
  return info;
}

/**
 * The plan a firing runs: as the schedule keeps it, with its target files read again now, so the
 * run probes what they hold today. Files that cannot be read (or hold a mistake) fail the firing
 * with every problem, and nothing is submitted; the schedule fires again next time.
 */
export async function planOfFiring(data: ScheduledRunData, maxJobs?: number): Promise<LoadedPlan> {
  const file = `schedule ${data.plan.name}`;
  const loaded: LoadedPlan = { plan: data.plan, file, tls: data.tls, ...(maxJobs !== undefined ? { maxJobs } : {}) };
  if (!data.targetFiles) return loaded;
  const { lab, ...source } = data.targetFiles;
  // Loaded here, for a firing with target files: a firing without them, and `schedule remove`,
  // need neither the file readers nor the YAML parser they bring.
  const [{ formatProblem }, { expandTargetFiles, isFileProblem, writtenPlanOf }, { withDualStackTargets }] =
    await Promise.all([import('./plan-loader.js'), import('./target-files.js'), import('./dual-stack.js')]);
  const expanded = await expandTargetFiles(writtenPlanOf(data.plan), source);
  if (expanded.problems.length > 0) {
    const lines = expanded.problems.map((p) =>
      isFileProblem(p) ? formatProblem(p) : printable(`${file}: ${formatIssuePath(p.path)}: ${p.message}`),
    );
    throw new ScheduleError(
      `${file}: its target files as they are now hold ${plural(lines.length, 'problem')}; nothing was submitted:\n${lines.slice(0, 50).join('\n')}`,
    );
  }
  const { plan, tls } = withDualStackTargets(expanded.plan, { ...data.tls, ...expanded.tls });
  try {
    return withLabTargets(
      { ...loaded, plan, tls },
      lab as LabAddress | undefined,
      'add the schedule again with --lab-at HOST:PORT',
    );
  } catch (err) {
    throw new ScheduleError((err as Error).message);
  }
}

/** False when there was no schedule of that name. */
export async function removeSchedule(fleet: Fleet, name: string): Promise<boolean> {
  return fleet.runs.removeJobScheduler(name);
}
