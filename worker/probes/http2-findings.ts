// The http2 probe's findings: one small rule per finding code, read from the job's details (ALPN,
// the h2c attempts, the concurrent requests over each protocol). HTTP2_RULES is the order they run in.
import { finding, type FindingRule } from '../../contracts/findings.js';
import type { H2cAttempt } from '../../contracts/probes/http2.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { fmtMs } from '../format.js';

export interface Http2FindingInput {
  details: ProbeDetails<'http2'>;
  /** The target answered HTTP/2: selected h2 (https) or answered h2c prior knowledge (http). */
  speaksH2: boolean;
}

/** H2_NOT_NEGOTIATED: an https target whose ALPN did not select h2. */
export const h2NotNegotiated: FindingRule<Http2FindingInput> = ({ details }, where) => {
  if (!details.alpn || details.alpn.selected === 'h2') return undefined;
  const offered = details.alpn.offered.join(', ');
  return finding(
    'H2_NOT_NEGOTIATED',
    where,
    details.alpn.selected === null
      ? `offered ALPN ${offered}; the server selected no protocol at all (no ALPN), so an HTTP/2 client cannot start`
      : `offered ALPN ${offered}; the server selected ${details.alpn.selected}`,
    { alpnSelected: details.alpn.selected ?? 'none' },
  );
};

/** An attempt the server let time out or closed without sending a byte. */
const unanswered = (attempt: H2cAttempt) => attempt.outcome === 'no-answer' || attempt.outcome === 'closed';

/** The two h2c attempts of an http target, and its HTTP/1.1 request's failure, when all three went unanswered. */
function silence({ details }: Http2FindingInput) {
  const { h2cPriorKnowledge: prior, h2cUpgrade: upgrade } = details;
  const h1Failed = details.errors.find((e) => e.step === 'h1-headers');
  return prior && upgrade && unanswered(prior) && unanswered(upgrade) && h1Failed ? { prior, upgrade, h1Failed } : null;
}

/** SERVER_NO_ANSWER: neither h2c attempt nor HTTP/1.1 got an answer. No protocol question was put
 * to the server, so none is answered "no" (H2C_UNSUPPORTED stays quiet). */
export const serverNoAnswer: FindingRule<Http2FindingInput> = (input, where) => {
  const silent = silence(input);
  if (!silent) return undefined;
  const { prior, upgrade, h1Failed } = silent;
  return finding(
    'SERVER_NO_ANSWER',
    where,
    `HTTP/2 prior knowledge: ${prior.answer}; Upgrade: h2c: ${upgrade.answer}; HTTP/1.1: ${h1Failed.code} (${h1Failed.message})`,
    { h1Error: h1Failed.code },
  );
};

/** H2C_UNSUPPORTED: an http target that answered, but neither h2c attempt with HTTP/2. */
export const h2cUnsupported: FindingRule<Http2FindingInput> = (input, where) => {
  const { h2cPriorKnowledge: prior, h2cUpgrade: upgrade } = input.details;
  if (!prior || !upgrade || prior.supported || upgrade.supported || silence(input)) return undefined;
  return finding('H2C_UNSUPPORTED', where, `prior knowledge: ${prior.answer}; Upgrade: h2c: ${upgrade.answer}`, {
    priorKnowledge: prior.answer,
    upgrade: upgrade.answer,
  });
};

/** HTTP1_ONLY_MANY_CONNECTIONS: a target without HTTP/2 whose concurrent requests needed several connections. */
export const http1OnlyManyConnections: FindingRule<Http2FindingInput> = ({ details, speaksH2 }, where) => {
  const h1 = details.multiplexing.h1;
  if (speaksH2 || details.h2cUpgrade?.supported || !h1 || h1.errors > 0 || h1.connectionsOpened <= 1) return undefined;
  const n = details.multiplexing.requests;
  return finding(
    'HTTP1_ONLY_MANY_CONNECTIONS',
    where,
    `${n} concurrent requests over HTTP/1.1 opened ${h1.connectionsOpened} connections and took ${fmtMs(h1.totalMs)}; over HTTP/2 they would share one`,
    { concurrentRequests: n, h1Connections: h1.connectionsOpened, h1TotalMs: h1.totalMs },
  );
};

export const HTTP2_RULES: readonly FindingRule<Http2FindingInput>[] = [
  h2NotNegotiated,
  serverNoAnswer,
  h2cUnsupported,
  http1OnlyManyConnections,
];
