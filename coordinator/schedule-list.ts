// The schedules as `schedule list` shows them, read from BullMQ's keys with the fleet's connection
// alone: no BullMQ, no report store, and none of the plan's schemas (contracts/schedule-summary.ts),
// so that listing starts as fast as a command that reads Redis can.
import { RUNS_QUEUE, schedulerKeys } from '../contracts/queues.js';
import { type ScheduleSummary, scheduleSummarySchema } from '../contracts/schedule-summary.js';
import { openSignedData } from '../common/job-signature.js';
import type { FleetConnection } from './fleet-connection.js';

export interface ScheduleInfo extends ScheduleSummary {
  name: string;
  cron?: string;
  tz?: string;
  everyMs?: number;
  /** When it fires next (absent for a schedule that will not fire again). */
  next?: Date;
}

/**
 * The schedules, the next to fire first, as Queue.getJobSchedulers reads them (contracts/queues.ts,
 * schedulerKeys); test/integration/schedules.test.ts holds the two to the same answer. A scheduler
 * removed between the two reads is left out. Each one's regions and jobs come from the summary
 * kept with it, else (a schedule added before summaries were kept) from its plan; a schedule
 * whose data is neither shows none.
 */
export async function listSchedules(fleet: FleetConnection): Promise<ScheduleInfo[]> {
  const { client, prefix } = fleet;
  const byNext = await client.zrange(schedulerKeys.index(prefix, RUNS_QUEUE), 0, '-1', 'WITHSCORES');
  const ids = byNext.filter((_, i) => i % 2 === 0);
  const settings = await Promise.all(ids.map((id) => client.hgetall(schedulerKeys.scheduler(prefix, RUNS_QUEUE, id))));
  const listed: ScheduleInfo[] = [];
  for (const [i, id] of ids.entries()) {
    const s = settings[i]!;
    if (Object.keys(s).length === 0) continue;
    const next = Number(byNext[2 * i + 1]);
    listed.push({
      name: id,
      ...(s.pattern ? { cron: s.pattern, tz: s.tz || 'UTC' } : {}),
      ...(s.every ? { everyMs: Number(s.every) } : {}),
      ...(next ? { next: new Date(next) } : {}),
      ...(await summaryOf(s.data)),
    });
  }
  return listed;
}

async function summaryOf(template: string | undefined): Promise<ScheduleSummary> {
  let data: unknown;
  try {
    data = template === undefined ? undefined : openSignedData(JSON.parse(template), undefined);
  } catch {
    return { regions: [], jobs: 0 };
  }
  const kept = scheduleSummarySchema.safeParse((data as { summary?: unknown } | undefined)?.summary);
  if (kept.success) return kept.data;
  // Loaded only here: the plan's schemas are what listing otherwise does without.
  const { summaryFromPlan } = await import('./schedule-summary.js');
  return summaryFromPlan(data) ?? { regions: [], jobs: 0 };
}
