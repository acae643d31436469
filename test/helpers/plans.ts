import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { JobPayload } from '../../contracts/job.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { splitPlan } from '../../coordinator/split.js';
import { tempDir } from './temp-dir.js';

/** The jobs of a plan written inline, through the real loader and splitter. */
export async function jobsOf(yamlText: string, runId = 'test-run'): Promise<JobPayload[]> {
  return splitPlan(await parsePlan(yamlText, 'inline.yaml'), runId);
}

/** Writes a plan to a fresh temporary file (the CLI reads plans from files). */
export async function writePlan(yamlText: string): Promise<string> {
  const file = path.join(tempDir('probefleet-plan-'), 'plan.yaml');
  await writeFile(file, yamlText);
  return file;
}
