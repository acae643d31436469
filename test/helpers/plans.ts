import type { JobPayload } from '../../contracts/job.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { splitPlan } from '../../coordinator/split.js';

/** The jobs of a plan written inline, through the real loader and splitter. */
export async function jobsOf(yamlText: string, runId = 'test-run'): Promise<JobPayload[]> {
  return splitPlan(await parsePlan(yamlText, 'inline.yaml'), runId);
}
