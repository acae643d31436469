// The reuse probe's findings from one job: REUSE_RULES. The new-connection cost and the stall of
// reused requests need both jobs of a target, and are judged by the run analysis
// (coordinator/analysis-reuse.ts).
import type { RequestSample } from '../../contracts/common.js';
import { finding, type FindingRule } from '../../contracts/findings.js';
import type { REUSE_MODES } from '../../contracts/probes/reuse.js';

export interface ReuseFindingInput {
  mode: (typeof REUSE_MODES)[number];
  samples: readonly RequestSample[];
  connectionsOpened: number;
}

/** SERVER_CLOSES_EVERY_CONNECTION: asked to keep one connection alive, every answer closed it. */
export const serverClosesEveryConnection: FindingRule<ReuseFindingInput> = (input, where) => {
  const answered = input.samples.filter((s) => !s.error);
  const closed = answered.filter((s) => s.serverClosed).length;
  const { connectionsOpened } = input;
  if (input.mode !== 'reused' || answered.length < 2 || connectionsOpened < answered.length || closed < answered.length)
    return undefined;
  return finding(
    'SERVER_CLOSES_EVERY_CONNECTION',
    where,
    `asked to keep one connection alive, ${answered.length} requests opened ${connectionsOpened} connections; ` +
      `${closed} of ${answered.length} responses said Connection: close`,
    { requests: answered.length, connectionsOpened, responsesWithClose: closed },
  );
};

export const REUSE_RULES: readonly FindingRule<ReuseFindingInput>[] = [serverClosesEveryConnection];
