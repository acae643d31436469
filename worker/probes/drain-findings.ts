// The drain probe's findings: DRAIN_RULES, read from the job's samples and connection counts.
import { finding, type FindingRule } from '../../contracts/findings.js';
import type { DrainClientName, DrainMode, DrainSample } from '../../contracts/probes/drain.js';
import { thousands } from '../../common/plural.js';

export interface DrainFindingInput {
  mode: DrainMode;
  /** The HTTP client whose policy for a body closed early was measured. */
  client: DrainClientName;
  /** The plan's drain caps (used in `drain` mode). */
  drainMaxBytes: number;
  drainMaxMs: number;
  samples: readonly DrainSample[];
  connectionsOpened: number;
  /** Connections opened because the body before was closed early. */
  extraConnections: number;
}

/** UNREAD_BODY_BREAKS_REUSE needs at least this share of requests to have paid a new connection
 * (one stray drain timeout on a busy machine is not a diagnosis). */
const FINDING_SHARE = 0.1;

const MODE_WORDS: Record<DrainMode, string> = {
  full: 'read to the end',
  unread: 'closed unread',
  drain: 'drained within the cap',
  json: 'closed once the JSON decoder reached the closing bracket',
};

/** UNREAD_BODY_BREAKS_REUSE: bodies closed before their end cost a new connection each. */
export const unreadBodyBreaksReuse: FindingRule<DrainFindingInput> = (input, where) => {
  const { mode, client, samples, connectionsOpened, extraConnections: extra } = input;
  if (extra === 0 || extra < FINDING_SHARE * samples.length) return undefined;
  const answered = samples.filter((s) => !s.error);
  const lengths = [
    ...new Set(answered.flatMap((s) => (s.body.contentLength === undefined ? [] : [s.body.contentLength]))),
  ];
  const size = lengths.length === 1 ? ` of ${thousands(lengths[0])} B` : '';
  const caps = mode === 'drain' ? capWords(input, answered) : '';
  return finding(
    'UNREAD_BODY_BREAKS_REUSE',
    where,
    `${client}: ${answered.length} requests, bodies${size} ${MODE_WORDS[mode]}: ${connectionsOpened} connections opened, ${extra} of them after a body closed before its end${caps}`,
    {
      mode,
      client,
      requests: answered.length,
      connectionsOpened,
      extraConnections: extra,
      ...(lengths.length === 1 ? { contentLength: lengths[0] } : {}),
    },
  );
};

function capWords(input: DrainFindingInput, samples: readonly DrainSample[]): string {
  const over = (hit: 'bytes' | 'time') => samples.filter((s) => s.body.capHit === hit).length;
  return ` (cap ${thousands(input.drainMaxBytes)} B / ${input.drainMaxMs} ms: ${over('bytes')} over the byte cap, ${over('time')} still arriving at the time cap)`;
}

export const DRAIN_RULES: readonly FindingRule<DrainFindingInput>[] = [unreadBodyBreaksReuse];
