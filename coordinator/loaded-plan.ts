// What the plan loader hands on, in a module of its own so that the modules the loader uses
// (split.ts counts a plan's jobs) can take a loaded plan without importing the loader back.
import type { JobTls } from '../contracts/job.js';
import type { Plan } from '../contracts/plan.js';

export interface LoadedPlan {
  plan: Plan;
  file: string;
  /** Per target name, TLS settings with any CA file read into PEM (jobs carry PEM, not paths). */
  tls: Record<string, JobTls | undefined>;
  /** The limit on jobs per run the plan was checked against; `splitPlan` holds to it too. */
  maxJobs?: number;
}
