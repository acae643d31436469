// `compression`: is compression worth it for this response and link?
// Asks for each Accept-Encoding in turn (interleaved, over one connection), decodes what came
// back with node:zlib here (undici neither asks for nor decodes encodings by itself, so the
// decode is timed on its own), builds the level table of the HTTP performance lecture
// (docs/probes.md#sources) on the decoded body, and models identity against each encoding at the
// plan's link speeds.
import { performance } from 'node:perf_hooks';
import {
  codingUnavailable,
  CONTENT_CODINGS,
  decodeCapped,
  isContentCoding,
  type DecodeOutcome,
} from '../../common/content-coding.js';
import { median } from '../../common/stats.js';
import type { ProbeError } from '../../contracts/common.js';
import { applyRules } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import type { AcceptEncoding, EncodingRow, LevelRow, ServerGzip } from '../../contracts/probes/compression.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { fmtBytes, fmtMs } from '../format.js';
import { runCpuTask } from '../cpu-thread.js';
import { CPU_TASKS_MODULE, type ServerGzipTask } from '../cpu-tasks.js';
import type { LevelTableTask } from '../level-table.js';
import { collectBody } from '../http/body.js';
import { runSequence, summarize } from '../http/sequence.js';
import { TimedHttpClient, type TimedExchange } from '../http/timed-client.js';
import { COMPRESSION_RULES, compressed, decodedOk } from './compression-findings.js';
import type { Probe } from './probe.js';

type Details = ProbeDetails<'compression'>;

/** The most body, as sent, the probe keeps in memory to decode. */
const MAX_BODY_BYTES = 32 << 20;
/** The level table compresses at most this much of the body: brotli 11 takes seconds per MiB. */
const MAX_TABLE_BYTES = 4 << 20;

interface Observation {
  status: number;
  contentEncoding: string | null;
  contentType: string | null;
  vary: string | null;
  encodedBytes: number;
  /** The first bytes as sent: 1f 8b is gzip. */
  firstBytesHex: string;
  wireBytes?: number;
  processingMs?: number;
  decodedBytes?: number;
  decodeMs?: number;
  decodeError?: string;
}

function header(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}

interface Decoded {
  /** The start of the decoded body (at most MAX_TABLE_BYTES): the level table's input, and the server gzip level's when it is the whole body. */
  kept?: Buffer;
  decodedBytes?: number;
  decodeMs?: number;
  decodeError?: string;
  /** Decoding stopped at a limit: the job ends with this. */
  stop?: ProbeError;
}

/** Decodes a body by its Content-Encoding (`x-gzip` is gzip; identity and none need nothing), within the experiment's limits. */
async function decodeBody(
  encoded: Buffer,
  contentEncoding: string | null,
  params: JobOf<'compression'>['params'],
): Promise<Decoded> {
  const coding = contentEncoding
    ?.trim()
    .toLowerCase()
    .replace(/^x-gzip$/, 'gzip');
  if (!coding || coding === 'identity')
    return { kept: encoded.subarray(0, MAX_TABLE_BYTES), decodedBytes: encoded.length, decodeMs: 0 };
  if (!isContentCoding(coding)) return { decodeError: `cannot decode Content-Encoding "${contentEncoding}"` };
  const unavailable = codingUnavailable(coding);
  if (unavailable) return { decodeError: unavailable };
  let outcome: DecodeOutcome;
  const start = performance.now();
  try {
    outcome = await decodeCapped(coding, encoded, {
      maxBytes: params.maxDecodedBytes,
      maxRatio: params.maxDecodeRatio,
      keepBytes: MAX_TABLE_BYTES,
    });
  } catch (err) {
    return { decodeError: `${coding} body does not decode: ${(err as Error).message}` };
  }
  const decodeMs = performance.now() - start;
  const { kept, decodedBytes, consumedBytes, stopped } = outcome;
  if (!stopped) return { kept, decodedBytes, decodeMs };
  const read = `after ${fmtBytes(consumedBytes)} of its ${fmtBytes(encoded.length)}`;
  const stop: ProbeError =
    stopped === 'size'
      ? {
          code: 'DECODED_BODY_TOO_LARGE',
          message: `the ${coding} body decoded past maxDecodedBytes (${fmtBytes(params.maxDecodedBytes)}) ${read}: decoding stopped at ${fmtBytes(decodedBytes)}`,
        }
      : {
          code: 'DECODE_RATIO_TOO_HIGH',
          message: `the ${coding} body decoded to ${fmtBytes(decodedBytes)} from the first ${fmtBytes(consumedBytes)} of its ${fmtBytes(encoded.length)}, over maxDecodeRatio (${params.maxDecodeRatio} to 1): a decompression bomb; decoding stopped there`,
        };
  return { decodedBytes, decodeError: stop.message, stop };
}

/** What one answer showed, and the start of its decoded body (kept apart: only one per encoding is kept). */
async function observe(
  exchange: TimedExchange<{ bytes: number; data: Buffer }>,
  params: JobOf<'compression'>['params'],
): Promise<{ observation: Observation; decoded: Decoded } | undefined> {
  const { head, body, sample } = exchange;
  if (!head || !body) return undefined;
  const contentEncoding = header(head.headers['content-encoding']);
  const decoded = await decodeBody(body.data, contentEncoding, params);
  const { decodedBytes, decodeMs, decodeError } = decoded;
  return {
    observation: {
      status: head.statusCode,
      contentEncoding,
      contentType: header(head.headers['content-type']),
      vary: header(head.headers.vary),
      encodedBytes: body.data.length,
      firstBytesHex: body.data.subarray(0, 4).toString('hex'),
      wireBytes: exchange.wireBytes,
      processingMs: sample.phases.processing,
      ...(decodedBytes !== undefined ? { decodedBytes } : {}),
      ...(decodeMs !== undefined ? { decodeMs } : {}),
      ...(decodeError ? { decodeError } : {}),
    },
    decoded,
  };
}

const medianOf = (values: (number | undefined)[]) => {
  const present = values.filter((v): v is number => v !== undefined);
  return present.length > 0 ? median(present) : undefined;
};

function encodingRow(acceptEncoding: AcceptEncoding, seen: Observation[]): EncodingRow {
  const last = seen.at(-1);
  const decodedBytes = medianOf(seen.map((o) => o.decodedBytes));
  const wireBytes = medianOf(seen.map((o) => o.wireBytes));
  const decodeMs = medianOf(seen.map((o) => o.decodeMs));
  const processingMs = medianOf(seen.map((o) => o.processingMs));
  const decodeError = seen.find((o) => o.decodeError)?.decodeError;
  return {
    acceptEncoding,
    answered: seen.length,
    ...(last ? { status: last.status } : {}),
    contentEncoding: last?.contentEncoding ?? null,
    contentType: last?.contentType ?? null,
    vary: last?.vary ?? null,
    encodedBytes: Math.round(medianOf(seen.map((o) => o.encodedBytes)) ?? 0),
    ...(wireBytes !== undefined ? { wireBytes: Math.round(wireBytes) } : {}),
    ...(decodedBytes !== undefined ? { decodedBytes: Math.round(decodedBytes) } : {}),
    ...(decodeMs !== undefined ? { decodeMs } : {}),
    ...(processingMs !== undefined ? { processingMs } : {}),
    firstBytesHex: last?.firstBytesHex ?? '',
    ...(decodeError ? { decodeError } : {}),
  };
}

export const runCompressionProbe: Probe<'compression'> = async (job, { signal, addresses, altSvc }) => {
  const { params } = job;
  const unavailable = params.encodings.flatMap((encoding) => {
    const reason = encoding === 'identity' ? undefined : codingUnavailable(encoding);
    return reason ? [{ encoding, reason }] : [];
  });
  const asked = params.encodings.filter((e) => !unavailable.some((u) => u.encoding === e));
  const seen = new Map<AcceptEncoding, Observation[]>(asked.map((e) => [e, []]));
  const bodies = new Map<AcceptEncoding, Buffer>();

  const client = new TimedHttpClient({ target: job.target, timeoutMs: params.timeoutMs, policy: addresses, altSvc });
  // A body decoded past a limit ends the job: no more requests.
  let decodeStop: ProbeError | undefined;
  const stopped = new AbortController();
  let run;
  try {
    const count = asked.length === 0 ? 0 : params.requests * asked.length;
    run = await runSequence(count, AbortSignal.any([signal, stopped.signal]), async (seq) => {
      const acceptEncoding = asked[seq % asked.length];
      const exchange = await client.exchange({
        seq,
        signal,
        headers: { 'accept-encoding': acceptEncoding },
        consumeBody: collectBody(MAX_BODY_BYTES),
      });
      const observed = await observe(exchange, params);
      const decoded = observed?.decoded;
      if (observed) seen.get(acceptEncoding)!.push(observed.observation);
      if (decoded?.kept && !decoded.decodeError) bodies.set(acceptEncoding, decoded.kept);
      if (decoded?.stop) {
        decodeStop = decoded.stop;
        stopped.abort();
      }
      return {
        ...exchange.sample,
        bodyBytes: decoded?.decodedBytes ?? exchange.sample.bodyBytes,
        ...(decoded?.stop ? { error: decoded.stop } : {}),
        acceptEncoding,
      };
    });
  } finally {
    await client.close();
  }

  const encodings = asked.map((e) => encodingRow(e, seen.get(e)!));
  const input = pickLevelTableInput(encodings, bodies);
  const table = input ? await buildLevelTable(input.body, input.contentType, params, signal) : null;
  const levelTable = table?.table ?? null;
  const serverGzip = await serverGzipOf(encodings, bodies, signal);
  const details: Details = {
    encodings,
    unavailable,
    levelTable,
    serverGzip,
    linkModel: linkModel(encodings, params.linkSpeedsMBps),
    samples: run.samples,
  };
  return {
    summary: summarize(run.samples, client.connections.length, run.durationMs),
    details,
    findings: applyRules(
      COMPRESSION_RULES,
      { details, tinyBytes: params.tinyBytes },
      { region: job.region, target: job.target.name, probe: job.probe },
    ),
    error:
      decodeStop ??
      run.stoppedEarly ??
      table?.stopped ??
      (asked.length === 0
        ? {
            code: 'INVALID_JOB',
            message: `none of the encodings asked for can be decoded here: ${unavailable.map((u) => u.reason).join('; ')}`,
          }
        : null),
  };
};

/** The identity body when it came back, else any decoded one (each at most MAX_TABLE_BYTES, as kept). */
function pickLevelTableInput(
  rows: EncodingRow[],
  bodies: Map<AcceptEncoding, Buffer>,
): { body: Buffer; contentType: string | null } | undefined {
  const usable = rows.filter((r) => decodedOk(r) && (bodies.get(r.acceptEncoding)?.length ?? 0) > 0);
  const row = usable.find((r) => r.contentEncoding === null) ?? usable[0];
  return row ? { body: bodies.get(row.acceptEncoding)!, contentType: row.contentType } : undefined;
}

/** The level table on `input`, in a thread the job's bound stops (worker/level-table.ts): the rows
 * measured by then, and why it stopped short when it did. */
async function buildLevelTable(
  input: Buffer,
  contentType: string | null,
  params: JobOf<'compression'>['params'],
  signal: AbortSignal,
): Promise<{ table: NonNullable<Details['levelTable']>; stopped?: ProbeError }> {
  const levels = { gzip: params.gzipLevels, br: params.brotliLevels, zstd: params.zstdLevels };
  const task: LevelTableTask = { input, levels, repetitions: params.repetitions };
  const { parts, stopped } = await runCpuTask<LevelRow>(CPU_TASKS_MODULE, 'level-table', task, signal);
  const table = { inputBytes: input.length, contentType, rows: parts };
  if (!stopped) return { table };
  const asked = CONTENT_CODINGS.filter((c) => !codingUnavailable(c)).reduce((n, c) => n + levels[c].length, 0);
  const where = `the level table stopped at ${stopped} after ${parts.length} of ${asked} levels`;
  return {
    table,
    stopped: signal.aborted
      ? { code: 'DEADLINE_EXCEEDED', message: where }
      : { code: 'INTERNAL_ERROR', message: where },
  };
}

/** The server's gzip level, from its gzip answer's size and decoded body (worker/gzip-levels.ts). */
async function serverGzipOf(
  rows: EncodingRow[],
  bodies: Map<AcceptEncoding, Buffer>,
  signal: AbortSignal,
): Promise<Details['serverGzip']> {
  const served = rows.find((r) => compressed(r) && r.contentEncoding?.toLowerCase() === 'gzip');
  const decoded = served && bodies.get(served.acceptEncoding);
  if (!served || !decoded) return null;
  // Only the start of a body is kept (MAX_TABLE_BYTES): a longer one cannot be compressed again whole.
  if (served.decodedBytes! > decoded.length)
    return {
      encodedBytes: served.encodedBytes,
      matches: [],
      exact: false,
      unknownReason: `the body is over ${decoded.length} bytes`,
    };
  const task: ServerGzipTask = { decoded, encodedBytes: served.encodedBytes };
  const { parts, stopped } = await runCpuTask<ServerGzip>(CPU_TASKS_MODULE, 'server-gzip', task, signal);
  return (
    parts[0] ?? { encodedBytes: served.encodedBytes, matches: [], exact: false, unknownReason: `stopped at ${stopped}` }
  );
}

/** Identity against each distinct encoding served: server compression + transfer + decode. */
function linkModel(rows: EncodingRow[], speeds: number[]): Details['linkModel'] {
  const distinct: EncodingRow[] = [];
  for (const row of rows.filter(decodedOk)) {
    if (!distinct.some((d) => (d.contentEncoding ?? 'identity') === (row.contentEncoding ?? 'identity')))
      distinct.push(row);
  }
  if (distinct.length === 0) return [];
  const identity = distinct.find((r) => !compressed(r));
  return speeds.map((linkMBps) => {
    const modelled = distinct.map((row) => {
      const wireBytes = row.wireBytes ?? row.encodedBytes;
      const compressMs =
        identity && compressed(row) ? Math.max(0, (row.processingMs ?? 0) - (identity.processingMs ?? 0)) : 0;
      const transferMs = (wireBytes / (linkMBps * 1e6)) * 1000;
      const decodeMs = row.decodeMs ?? 0;
      return {
        acceptEncoding: row.acceptEncoding,
        contentEncoding: row.contentEncoding,
        wireBytes,
        compressMs,
        transferMs,
        decodeMs,
        totalMs: compressMs + transferMs + decodeMs,
      };
    });
    const fastest = modelled.reduce((a, b) => (b.totalMs < a.totalMs ? b : a));
    const plain = modelled.find((m) => m.contentEncoding === null);
    let recommendation: string;
    if (!plain)
      recommendation = `${fastest.contentEncoding} is the fastest of the encodings served (no identity answer to compare with)`;
    else if (fastest === plain) {
      const rival = modelled.filter((m) => m !== plain).sort((a, b) => a.totalMs - b.totalMs)[0];
      recommendation = rival
        ? `identity is faster by ${fmtMs(rival.totalMs - plain.totalMs)} than ${rival.contentEncoding} (${fmtMs(plain.totalMs)} vs ${fmtMs(rival.totalMs)}): compressing costs more time than the bytes it saves`
        : `only identity was served (${fmtMs(plain.totalMs)} per response)`;
    } else {
      recommendation = `${fastest.contentEncoding} saves ${fmtMs(plain.totalMs - fastest.totalMs)} per response (${fmtMs(fastest.totalMs)} vs ${fmtMs(plain.totalMs)} identity)`;
    }
    return { linkMBps, rows: modelled, fastest: fastest.acceptEncoding, recommendation };
  });
}
