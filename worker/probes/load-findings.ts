// The load probe's findings: LOAD_RULES, read from the job's counts.
import { finding, type FindingRule } from '../../contracts/findings.js';
import { type LoadMode, SATURATED_UTILIZATION } from '../../contracts/probes/load.js';

export interface LoadFindingInput {
  mode: LoadMode;
  /** The plan's `connections`: the keep-alive connections the load runs over. */
  connections: number;
  /** Answered requests. */
  completed: number;
  connectionsOpened: number;
  /** Per thread that sent the load, the share of the run its event loop was busy. */
  eventLoopUtilization: readonly number[];
  /** Cores the worker may use. */
  cores: number;
}

/** SERVER_CLOSES_EVERY_CONNECTION: keep-alive asked for, yet (nearly) every answered request needed a connection of its own. */
export const keepAliveLostUnderLoad: FindingRule<LoadFindingInput> = (input, where) => {
  const { mode, connections, completed, connectionsOpened } = input;
  if (mode === 'new' || completed < 2 * connections || connectionsOpened < 0.9 * completed) return undefined;
  return finding(
    'SERVER_CLOSES_EVERY_CONNECTION',
    where,
    `under load with ${connections} keep-alive connections (${mode}), ${completed} answered requests opened ${connectionsOpened} connections`,
    { requests: completed, connectionsOpened, connections },
  );
};

/** LOAD_CLIENT_SATURATED: a thread sending the load was busy (nearly) all the run, so its requests
 * waited for the client itself: the latencies are the client's as much as the target's. */
export const clientSaturated: FindingRule<LoadFindingInput> = (input, where) => {
  const { eventLoopUtilization, cores, completed } = input;
  const busiest = Math.max(...eventLoopUtilization);
  if (completed === 0 || busiest < SATURATED_UTILIZATION) return undefined;
  const threads = eventLoopUtilization.length;
  const percent = Math.round(busiest * 100);
  return finding(
    'LOAD_CLIENT_SATURATED',
    where,
    `the load generator was busy ${percent}% of the run (${threads === 1 ? 'its thread' : `the busiest of its ${threads} threads`}; ${cores} ${cores === 1 ? 'core' : 'cores'}): these latencies include the client's own queueing; ${threads < cores ? 'add threads or workers' : 'add workers'}`,
    { utilizationPercent: percent, threads, cores },
  );
};

export const LOAD_RULES: readonly FindingRule<LoadFindingInput>[] = [keepAliveLostUnderLoad, clientSaturated];
