// A schedule's summary (contracts/schedule-summary.ts) worked out from its plan: when it is added,
// and for `schedule list` of a schedule kept without one.
import type { Plan } from '../contracts/plan.js';
import { scheduledRunDataSchema } from '../contracts/run-job.js';
import type { ScheduleSummary } from '../contracts/schedule-summary.js';
import { countJobs } from './split.js';

export function summaryOf(plan: Plan): ScheduleSummary {
  return { regions: plan.regions, jobs: countJobs(plan).total };
}

/** The summary of a schedule's data (opened) from its plan; undefined if the data is not a schedule's. */
export function summaryFromPlan(data: unknown): ScheduleSummary | undefined {
  const parsed = scheduledRunDataSchema.safeParse(data);
  return parsed.success ? summaryOf(parsed.data.plan) : undefined;
}
