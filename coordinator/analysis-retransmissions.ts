// Retransmission timeouts in the tail of connects and TLS handshakes. A lost SYN (or SYN-ACK) is
// sent again only after TCP's initial retransmission timeout, 1 s (RFC 6298; Linux
// TCP_TIMEOUT_INIT, then 1 s more per loss on Linux 6.7+ and doubling before), so that connect
// takes 1 s + RTT instead of one RTT. A lost flight of the handshake waits for the connection's
// own timeout, at least 200 ms on Linux (TCP_RTO_MIN). Such samples stand apart from the rest by
// a step, not a spread: slower than the job's median by nearly the timeout, and by far more than
// the samples' ordinary spread. Judged per job (its samples share one path and one handshake
// shape), one finding per job and kind: how many waited, and what the waits cost.
import { finding, type Finding, type FindingCode, type FindingRule } from '../contracts/findings.js';
import type { OtherProbe, ProbeKind, RequestSampleProbe } from '../contracts/probes/index.js';
import type { ProbeResult, ResultOf } from '../contracts/result.js';
import { percentile, sortedCopy } from '../common/stats.js';
import { formatMs } from './report/format.js';

interface StepKind {
  code: FindingCode;
  /** The smallest retransmission timeout this kind of sample can wait for. */
  timeoutMs: number;
  noun: string;
  waitedFor: string;
}

const STEP_KINDS = {
  connect: { code: 'CONNECT_RETRANSMITTED', timeoutMs: 1000, noun: 'connects', waitedFor: 'a retransmitted SYN' },
  handshake: {
    code: 'HANDSHAKE_RETRANSMITTED',
    timeoutMs: 200,
    noun: 'TLS handshakes',
    waitedFor: 'a retransmission timeout',
  },
} as const satisfies Record<string, StepKind>;

/** A step is at least this share of the timeout above the median (the timer fires on time, the
 * median sample may be a little slow) ... */
const STEP_SHARE_OF_TIMEOUT = 0.9;
/** ... and this many times the samples' ordinary spread, p50 − p10: a jittery link's spread is
 * no step. (Below the median, so however many samples stepped, up to half, it stays ordinary.) */
const STEP_SPREADS = 4;
/** Fewer samples have no median to stand apart from. */
const MIN_SAMPLES = 5;
/** Evidence lists this many waits, the longest first. */
const LISTED_WAITS = 5;
/** Steps are the network's only when the measuring thread waited for a CPU less than this share
 * of them in the job (result.worker.cpuWaitMs): a busy machine stalls a handshake as a lost flight does. */
const CPU_WAIT_SHARE = 0.5;

/** Samples of one kind that belong together (one path, one handshake shape), per job. */
type SampleGroups = Record<keyof typeof STEP_KINDS, { label: string; values: number[] }[]>;

const present = (values: (number | undefined)[]) => values.filter((v): v is number => v !== undefined);

/** A probe with request samples: the connects and handshakes of the requests that opened a connection. */
function newConnectionGroups(result: ResultOf<RequestSampleProbe>): SampleGroups {
  const opened = (result.details?.samples ?? []).filter((s) => !s.error && s.newConnection);
  return {
    connect: [{ label: '', values: present(opened.map((s) => s.phases.connect)) }],
    handshake: [{ label: '', values: present(opened.map((s) => s.phases.tls)) }],
  };
}

const NO_SAMPLES: SampleGroups = { connect: [], handshake: [] };

/** Per probe, its samples with connect and handshake times; one with request samples needs no entry. */
const SAMPLE_GROUPS: { [K in OtherProbe]: (result: ResultOf<K>) => SampleGroups } & {
  [K in RequestSampleProbe]?: (result: ResultOf<K>) => SampleGroups;
} = {
  tls: (result) => {
    const answered = (result.details?.samples ?? []).filter((s) => !s.error);
    const version = `TLS ${result.variant.version}`;
    return {
      connect: [{ label: '', values: present(answered.map((s) => s.phases.connect)) }],
      // A resumed handshake is shorter than a full one: apart, each has its own median.
      handshake: [false, true].map((resumed) => ({
        label: `${version} ${resumed ? 'resumed' : 'full'} `,
        values: present(answered.filter((s) => s.resumed === resumed).map((s) => s.phases.tls)),
      })),
    };
  },
  // One connection per protocol, and a load job's connections are not timed one by one.
  http2: () => NO_SAMPLES,
  load: () => NO_SAMPLES,
  // DNS over UDP: no connection (c-ares's own retries are off: one try per lookup).
  dns: () => NO_SAMPLES,
};

function sampleGroups(result: ProbeResult): SampleGroups {
  const groups = (SAMPLE_GROUPS as Partial<Record<ProbeKind, (r: ProbeResult) => SampleGroups>>)[result.probe];
  return (groups ?? (newConnectionGroups as (r: ProbeResult) => SampleGroups))(result);
}

/** The median, and the waits (ms over it) of the samples a step above the rest; undefined for too few samples. */
export function timeoutWaits(
  values: readonly number[],
  timeoutMs: number,
): { medianMs: number; waitsMs: number[] } | undefined {
  if (values.length < MIN_SAMPLES) return undefined;
  const sorted = sortedCopy(values);
  const medianMs = percentile(sorted, 50);
  const spread = medianMs - percentile(sorted, 10);
  const threshold = medianMs + Math.max(STEP_SHARE_OF_TIMEOUT * timeoutMs, STEP_SPREADS * spread);
  return {
    medianMs,
    waitsMs: Array.from(
      sorted.filter((v) => v >= threshold),
      (v) => v - medianMs,
    ),
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function stepFinding(
  result: ProbeResult,
  kind: StepKind,
  groups: SampleGroups[keyof SampleGroups],
): Finding | undefined {
  const stepped = groups.flatMap(({ label, values }) => {
    const steps = timeoutWaits(values, kind.timeoutMs);
    return steps && steps.waitsMs.length > 0 ? [{ label, ...steps }] : [];
  });
  if (stepped.length === 0) return undefined;
  const all = groups.flatMap((g) => g.values);
  const waits = stepped.flatMap((s) => s.waitsMs).sort((a, b) => b - a);
  const sorted = sortedCopy(all);
  const totalMs = waits.reduce((a, b) => a + b, 0);
  if ((result.worker.cpuWaitMs ?? 0) >= CPU_WAIT_SHARE * totalMs) return undefined;
  const listed = waits.slice(0, LISTED_WAITS).map((w) => `+${seconds(w)}`);
  const medians = stepped.map((s) => `${s.label}median ${formatMs(s.medianMs)}`).join(', ');
  return finding(
    kind.code,
    { region: result.region, target: result.target, probe: result.probe },
    `${waits.length} of ${all.length} ${kind.noun} waited for ${kind.waitedFor}: ` +
      `${listed.join(', ')}${waits.length > LISTED_WAITS ? ', ...' : ''} over the ${medians} ` +
      `(${seconds(totalMs)} in all); p95 ${formatMs(percentile(sorted, 95))}, p99 ${formatMs(percentile(sorted, 99))}`,
    {
      samples: all.length,
      retransmitted: waits.length,
      waitedMs: totalMs,
      longestWaitMs: waits[0],
      p50Ms: percentile(sorted, 50),
      p95Ms: percentile(sorted, 95),
      p99Ms: percentile(sorted, 99),
    },
  );
}

/** CONNECT_RETRANSMITTED: some of the job's connects waited for a retransmitted SYN. */
export const connectRetransmitted: FindingRule<ProbeResult> = (result) =>
  stepFinding(result, STEP_KINDS.connect, sampleGroups(result).connect);

/** HANDSHAKE_RETRANSMITTED: some of the job's TLS handshakes waited for a retransmission timeout. */
export const handshakeRetransmitted: FindingRule<ProbeResult> = (result) =>
  stepFinding(result, STEP_KINDS.handshake, sampleGroups(result).handshake);
