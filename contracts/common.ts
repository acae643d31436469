// Building blocks shared by every schema: names, phases, error codes, findings.
// Nothing in contracts/ does I/O; coordinator and worker both import it.
import { z } from 'zod';

/** Names end up in job ids, queue names and metric labels, so they are short and plain. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const nameSchema = z
  .string()
  .regex(NAME_PATTERN, 'must be 1-63 characters of a-z, 0-9, "-" or "_", starting with a letter or digit');

/**
 * A list whose values may each appear once: a repeat would ask for the same job twice (jobs with
 * the same id are one job), so it is a mistake worth naming. Points at the repeated item.
 */
export function distinct<T extends z.ZodArray>(list: T, what: string): T {
  return list.superRefine((values, ctx) => {
    values.forEach((value, i) => {
      if (values.indexOf(value) !== i)
        ctx.addIssue({ code: 'custom', path: [i], message: `lists ${what} "${String(value)}" twice` });
    });
  }) as T;
}

/** The request phases, with the names blackbox_exporter made familiar. */
export const PHASES = ['resolve', 'connect', 'proxy', 'tls', 'processing', 'transfer', 'total'] as const;
export type Phase = (typeof PHASES)[number];

/** Durations of one request, in milliseconds. A phase that does not apply is absent;
 * one that applies but was skipped (connect on a reused connection) is 0. */
export const phaseTimesSchema = z.partialRecord(z.enum(PHASES), z.number().nonnegative());
export type PhaseTimes = z.infer<typeof phaseTimesSchema>;

export const percentilesSchema = z.strictObject({
  p50: z.number(),
  p95: z.number(),
  /** Always written; absent in older results, which still read. */
  p99: z.number().optional(),
  n: z.int().nonnegative(),
});
export type Percentiles = z.infer<typeof percentilesSchema>;

/**
 * The closed set of failure codes. A target's failure is data: a result carries one of these,
 * never a raw message to match on. Classification lives in worker/classify-error.ts.
 */
export const ERROR_CODES = [
  'DNS_FAILED',
  'CONNECTION_REFUSED',
  'CONNECTION_RESET',
  'CONNECT_TIMEOUT',
  'RESPONSE_TIMEOUT',
  /** The body did not end within the request's time bound (it came too slowly, or stopped). */
  'BODY_TIMEOUT',
  /** The response head was larger than the client accepts (16 KiB; 64 KiB for the http2 probe's hand-read HTTP/1.1 heads). */
  'RESPONSE_HEADERS_TOO_LARGE',
  'TLS_CERT_UNTRUSTED',
  'TLS_CERT_EXPIRED',
  'TLS_HOSTNAME_MISMATCH',
  'TLS_VERSION_UNSUPPORTED',
  'TLS_HANDSHAKE_FAILED',
  /** The server requires a client certificate and the target gives none (tls.cert, tls.key). */
  'TLS_CLIENT_CERT_REQUIRED',
  /** The connection was reset or closed during the TLS handshake, with no TLS alert. */
  'TLS_HANDSHAKE_RESET',
  'HTTP_PROTOCOL_ERROR',
  'HTTP2_ERROR',
  /** The server sent GOAWAY with an error code while a request was in flight. */
  'HTTP2_GOAWAY',
  /** The server reset a request's stream (RST_STREAM with an error code). */
  'HTTP2_STREAM_RESET',
  'SOCKET_CLOSED',
  'DEADLINE_EXCEEDED',
  'TARGET_REFUSED_BY_POLICY',
  /** The proxy did not open a tunnel to the target (a CONNECT answered other than 2xx, or not at all). */
  'PROXY_REFUSED',
  /** A response failed the target's checks (`checks`: its status, a header, its body). */
  'RESPONSE_CHECK_FAILED',
  /** The body is not what the probe needs (not JSON for the drain probe's json mode, too large to decode). */
  'UNEXPECTED_BODY',
  /** The response was longer than a job may read (JOB_LIMITS.responseBytes); reading stopped there. */
  'RESPONSE_TOO_LARGE',
  /** A body decoded to more than the experiment's `maxDecodedBytes`; decoding stopped there. */
  'DECODED_BODY_TOO_LARGE',
  /** A body decoded to more than `maxDecodeRatio` bytes per encoded byte: a decompression bomb; decoding stopped there. */
  'DECODE_RATIO_TOO_HIGH',
  /** A header or the URL refers to an environment variable (`${env:NAME}`) this worker does not have. */
  'SECRET_NOT_SET',
  /** A referenced variable's value cannot be sent where it stands (a control character or a
   * character beyond Latin-1 in a header value): the job sent nothing. */
  'SECRET_INVALID',
  'INVALID_JOB',
  /** A job spread over several workers (the load probe's `workers`) did not run on all of them
   * together: fewer workers of the region took a shard within its `joinSeconds`, a shard came after
   * the others had started, or a shard has no result. */
  'SHARDS_NOT_TOGETHER',
  /** The job killed its worker: the worker running it was lost, and a process of its own running it again died too. */
  'KILLED_WORKER',
  'INTERNAL_ERROR',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const probeErrorSchema = z.strictObject({
  code: z.enum(ERROR_CODES),
  message: z.string(),
});
export type ProbeError = z.infer<typeof probeErrorSchema>;

export const SEVERITIES = ['info', 'warning', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** A finding code's entry in the catalogue (contracts/findings.ts). */
export interface FindingSpec {
  severity: Severity;
  /** One line: what was seen. */
  title: string;
  /** The situation column of the decision table. */
  situation: string;
  /** What to do about it. */
  advice: string;
  /** Exactly when it fires, for the catalogue (docs/catalogue.md); may hold Markdown. */
  when: string;
}

/** One measured HTTP request: what every request-issuing probe reports per request. */
export const requestSampleSchema = z.strictObject({
  /** 0-based position in the job's sequence. */
  seq: z.int().nonnegative(),
  status: z.int().optional(),
  /** True when this request opened a connection (counted at the socket layer). */
  newConnection: z.boolean(),
  phases: phaseTimesSchema,
  /** Body bytes received, after any content decoding the probe did. */
  bodyBytes: z.int().nonnegative(),
  /** The response said `Connection: close`. */
  serverClosed: z.boolean().optional(),
  /** https, on a request that opened a connection: the server resumed the TLS session offered. */
  tlsResumed: z.boolean().optional(),
  error: probeErrorSchema.optional(),
});
export type RequestSample = z.infer<typeof requestSampleSchema>;
