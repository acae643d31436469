// What the plan loader hands on, in a module of its own so that the modules the loader uses
// (split.ts counts a plan's jobs) can take a loaded plan without importing the loader back.
import type { JobTls } from '../contracts/job.js';
import type { LabAddress } from '../contracts/lab-roles.js';
import type { Plan } from '../contracts/plan.js';
import type { TargetFilesSource } from './target-files.js';

export interface LoadedPlan {
  plan: Plan;
  file: string;
  /** Per target name, TLS settings with any CA file read into PEM (jobs carry PEM, not paths). */
  tls: Record<string, JobTls | undefined>;
  /** The limit on jobs per run the plan was checked against; `splitPlan` holds to it too. */
  maxJobs?: number;
  /** Where the plan's experiments are written: a refusal of their jobs made later (a run in one
   * process, `--regions`) names the place as the loader's problems do. */
  experimentsAt?: { line: number; column: number };
  /** A plan with `targetFiles`: what reading them again needs (a schedule reads them at each firing). */
  targetFiles?: TargetFilesSource;
  /** Where the lab is, once an entry point said so: lab URLs in target files read later resolve there. */
  lab?: LabAddress;
}
