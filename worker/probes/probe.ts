// The one shape every probe has: a job in, an outcome out. Probes never throw for a target's
// failure (that is data, in `error` and the samples); a throw is a bug.
import type { ProbeError } from '../../contracts/common.js';
import type { Finding } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import type { ProbeDetails, ProbeKind } from '../../contracts/probes/index.js';
import type { Summary } from '../../contracts/result.js';
import type { Logger } from '../../common/log.js';
import type { AltSvcLog } from '../http/alt-svc.js';
import type { TargetAddresses } from '../target-addresses.js';

export interface ProbeContext {
  /** Aborted when the job's time bound is reached or the worker shuts down. */
  signal: AbortSignal;
  log: Logger;
  /** Where the probe's connections go: the target's addresses as its settings resolve them,
   * checked by the worker's target policy. Every connector it opens takes it. */
  addresses: TargetAddresses;
  /** A command named in the job may run (embedded runs; never a worker's jobs from Redis). */
  allowClientCommands: boolean;
  /** Every Alt-Svc header value a response of this job carried: probes note what they see. */
  altSvc: AltSvcLog;
}

export interface ProbeOutcome<K extends ProbeKind> {
  summary: Summary;
  /** Null only when the probe could not start. */
  details: ProbeDetails<K> | null;
  findings: Finding[];
  /** Why the probe could not measure everything it was asked to; null when it did. */
  error: ProbeError | null;
}

export type Probe<K extends ProbeKind> = (job: JobOf<K>, ctx: ProbeContext) => Promise<ProbeOutcome<K>>;
