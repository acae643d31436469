// What a fleet keeps in Redis, and for how long: one set of settings that every process reads
// the same way (cli/options/retention.ts: flags and PROBEFLEET_*_RETENTION_* variables),
// because each applies its part: workers to the probe jobs that fail, the coordinator to failed
// run jobs and fired schedules, whoever stores a report to the reports. No I/O.
//
// A result is stored once: its worker saves it with the run (worker/run-results.ts; a batch's last
// one may ride on its completion into the parent's `processed` hash), a batch of probe jobs is
// removed as it completes, and the saved results and the parent go once the run is reported. So
// job retention covers only what has no other copy: failed jobs (their payload and error) and the
// record of each fired schedule. docs/distributed.md, "Storage in Redis", has the whole layout.

/** How much of one kind is kept: whichever bound is reached first removes the oldest. */
export interface Keep {
  /** Older than this is removed. */
  maxAgeSeconds: number;
  /** Beyond this many (per queue for jobs, per fleet prefix for reports), the oldest go. */
  maxCount: number;
}

export interface RetentionSettings {
  /** Failed probe and run jobs, and fired schedules. */
  jobs: Keep;
  /** Stored run reports. */
  reports: Keep;
}

export const DEFAULT_RETENTION: RetentionSettings = {
  jobs: { maxAgeSeconds: 7 * 86_400, maxCount: 1_000 },
  reports: { maxAgeSeconds: 30 * 86_400, maxCount: 1_000 },
};

/** BullMQ's form of a bound (`removeOnComplete` / `removeOnFail`): age in seconds and a count. */
export function bullmqKeep(keep: Keep): { age: number; count: number } {
  return { age: keep.maxAgeSeconds, count: keep.maxCount };
}
