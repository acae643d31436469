// What `schedule list` shows of a schedule besides when it fires: a firing's regions and jobs.
// Kept in the scheduler's data beside the plan (run-job.ts, scheduledRunDataSchema), so that
// listing checks these two fields and builds none of the plan's schemas.
import { z } from 'zod';
import { nameSchema } from './common.js';

export const scheduleSummarySchema = z.strictObject({
  /** The plan's regions, in its order. */
  regions: z.array(nameSchema).min(1),
  /** The jobs each firing submits, over every region. */
  jobs: z.int().min(0),
});
export type ScheduleSummary = z.output<typeof scheduleSummarySchema>;
