// Nightly (or any cron) runs as BullMQ job schedulers on the runs queue, one per plan name:
// adding a plan's schedule again replaces it. When one fires, the coordinator submits a run.
import { scheduleSchema } from '../contracts/plan.js';
import { JOB_NAMES } from '../contracts/queues.js';
import { SCHEDULED_RUN_SCHEMA, scheduledRunDataSchema, type ScheduledRunData } from '../contracts/run-job.js';
import { formatIssuePath } from '../common/issue-path.js';
import { openSignedData, signData } from '../common/job-signature.js';
import type { Fleet } from './fleet.js';
import type { LoadedPlan } from './loaded-plan.js';
import { countJobs } from './split.js';

export class ScheduleError extends Error {
  override name = 'ScheduleError';
}

/** When a plan runs: a cron expression in a time zone, or a fixed interval. */
export type ScheduleSpec = { cron: string; tz: string } | { everyMs: number };

export interface ScheduleInfo {
  name: string;
  cron?: string;
  tz?: string;
  everyMs?: number;
  /** When it fires next (absent for a schedule that will not fire again). */
  next?: Date;
  regions: string[];
  jobs: number;
}

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
  const data: ScheduledRunData = {
    schema: SCHEDULED_RUN_SCHEMA,
    plan: loaded.plan,
    tls: Object.fromEntries(
      Object.entries(loaded.tls).filter(([, tls]) => tls !== undefined),
    ) as ScheduledRunData['tls'],
    ...(deadlineSeconds ? { deadlineSeconds } : {}),
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

export async function listSchedules(fleet: Fleet): Promise<ScheduleInfo[]> {
  const schedulers = await fleet.runs.getJobSchedulers(0, -1, true);
  return schedulers.map((s) => {
    const data = scheduledRunDataSchema.safeParse(openSignedData(s.template?.data, undefined));
    const plan = data.success ? data.data.plan : undefined;
    return {
      name: s.key,
      ...(s.pattern ? { cron: s.pattern, tz: s.tz ?? 'UTC' } : {}),
      ...(s.every ? { everyMs: Number(s.every) } : {}),
      ...(s.next ? { next: new Date(s.next) } : {}),
      regions: plan?.regions ?? [],
      jobs: data.success ? countJobs(data.data.plan).total : 0,
    };
  });
}

/** False when there was no schedule of that name. */
export async function removeSchedule(fleet: Fleet, name: string): Promise<boolean> {
  return fleet.runs.removeJobScheduler(name);
}
