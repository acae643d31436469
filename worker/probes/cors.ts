// `cors`: does the preflight answer what a browser needs, and what does a refused origin still get?
// Per origin (the plan's allowed and refused ones, plus a made-up one no allowlist holds): a
// preflight (OPTIONS with Origin and Access-Control-Request-*), then the simple GET a page would
// send, tagged with a request id. The browser's checks (Fetch Standard) are applied to the
// answers here; no browser runs. An optional server log shows which GETs the server ran.
import { randomBytes, randomUUID } from 'node:crypto';
import type { ProbeError, RequestSample } from '../../contracts/common.js';
import { applyRules } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { REQUEST_ID_HEADER, type CorsAnswer, type CorsOriginResult } from '../../contracts/probes/cors.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { collectBody, type BodyRead } from '../http/body.js';
import { MAX_CONSECUTIVE_FAILURES, summarize } from '../http/sequence.js';
import { performance } from 'node:perf_hooks';
import { TimedHttpClient, type TimedExchange, type TimedRequestOptions } from '../http/timed-client.js';
import { CORS_RULES, okStatus } from './cors-findings.js';
import type { Probe } from './probe.js';

type Details = ProbeDetails<'cors'>;

/** Methods a browser sends without asking (CORS-safelisted). */
const SAFELISTED_METHODS = new Set(['GET', 'HEAD', 'POST']);
/** The most of a server log the probe reads. */
const MAX_LOG_BYTES = 4 << 20;

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function answerOf(exchange: TimedExchange<BodyRead>): CorsAnswer {
  const h = exchange.head?.headers ?? {};
  const fields = {
    status: exchange.head?.statusCode,
    allowOrigin: one(h['access-control-allow-origin']),
    allowCredentials: one(h['access-control-allow-credentials']),
    allowMethods: one(h['access-control-allow-methods']),
    allowHeaders: one(h['access-control-allow-headers']),
    maxAge: one(h['access-control-max-age']),
    vary: one(h.vary),
    error: exchange.sample.error,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as CorsAnswer;
}

const list = (header: string | undefined) =>
  (header ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** Does this answer let `origin` read it (the Fetch Standard's CORS check)? */
function allowsOrigin(answer: CorsAnswer, origin: string, credentials: boolean): boolean {
  if (credentials) return answer.allowOrigin === origin && answer.allowCredentials === 'true';
  return answer.allowOrigin === '*' || answer.allowOrigin === origin;
}

function verdictOf(
  preflight: CorsAnswer,
  get: CorsAnswer,
  origin: string,
  params: JobOf<'cors'>['params'],
): CorsOriginResult['verdict'] {
  const { credentials, method, requestHeaders } = params;
  const methods = list(preflight.allowMethods);
  const headers = list(preflight.allowHeaders).map((h) => h.toLowerCase());
  const wildcard = (values: string[]) => !credentials && values.includes('*');
  return {
    preflightAllowsOrigin: okStatus(preflight.status) && allowsOrigin(preflight, origin, credentials),
    methodAllowed: SAFELISTED_METHODS.has(method) || methods.includes(method) || wildcard(methods),
    // A wildcard never covers Authorization.
    headersMissing: requestHeaders.filter(
      (h) => !headers.includes(h.toLowerCase()) && !(wildcard(headers) && h.toLowerCase() !== 'authorization'),
    ),
    getReadable: allowsOrigin(get, origin, credentials),
  };
}

export const runCorsProbe: Probe<'cors'> = async (job, { signal, addresses, altSvc }) => {
  const { params } = job;
  const origins: { origin: string; role: CorsOriginResult['role'] }[] = [
    ...params.allowedOrigins.map((origin) => ({ origin, role: 'allowed' as const })),
    ...params.refusedOrigins.map((origin) => ({ origin, role: 'refused' as const })),
    // Reserved TLD: no allowlist can hold it, so an echo means any origin is echoed.
    { origin: `https://probefleet-${randomBytes(4).toString('hex')}.example`, role: 'random' as const },
  ];
  const client = new TimedHttpClient({ target: job.target, timeoutMs: params.timeoutMs, policy: addresses, altSvc });
  const samples: RequestSample[] = [];
  const results: CorsOriginResult[] = [];
  let serverLog: Details['serverLog'] = null;
  let stoppedEarly: ProbeError | null = null;
  let failuresInARow = 0;
  const send = async <T extends BodyRead>(opts: Omit<TimedRequestOptions<T>, 'seq' | 'signal'>) => {
    const exchange = await client.exchange({ ...opts, seq: samples.length, signal });
    samples.push(exchange.sample);
    failuresInARow = exchange.sample.error ? failuresInARow + 1 : 0;
    return exchange;
  };

  const start = performance.now();
  let durationMs = 0;
  try {
    for (const { origin, role } of origins) {
      if (signal.aborted || failuresInARow >= MAX_CONSECUTIVE_FAILURES) break;
      const preflight = answerOf(
        await send({
          method: 'OPTIONS',
          // The preflight's answer is what the probe reads, whatever its status.
          checked: false,
          headers: {
            origin,
            'access-control-request-method': params.method,
            ...(params.requestHeaders.length > 0
              ? { 'access-control-request-headers': params.requestHeaders.join(',').toLowerCase() }
              : {}),
          },
        }),
      );
      const requestId = randomUUID();
      // The page's own request, with the target's method and body (GET unless the target names
      // one); held to the target's checks only where the origin is allowed: refusing another
      // origin is the server's right.
      const got = await send({ checked: role === 'allowed', headers: { origin, [REQUEST_ID_HEADER]: requestId } });
      const get = { ...answerOf(got), bodyBytes: got.sample.bodyBytes, requestId };
      results.push({ origin, role, preflight, get, verdict: verdictOf(preflight, get, origin, params) });
    }
    if (params.serverLogPath && results.length > 0 && !signal.aborted) {
      const log = await send({
        path: params.serverLogPath,
        method: 'GET',
        checked: false,
        consumeBody: collectBody(MAX_LOG_BYTES),
      });
      serverLog = {
        path: params.serverLogPath,
        ...(log.head ? { status: log.head.statusCode } : {}),
        ...(log.sample.error ? { error: log.sample.error } : {}),
      };
      if (okStatus(log.head?.statusCode) && log.body) {
        const text = log.body.data.toString('utf8');
        for (const r of results) r.get.ranOnServer = text.includes(r.get.requestId);
      }
    }
    durationMs = performance.now() - start;
  } finally {
    await client.close();
  }

  const failed = samples.filter((s) => s.error);
  if (failed.length > 0) {
    stoppedEarly = {
      code: failed[0].error!.code,
      message: `${failed.length} of ${samples.length} requests failed: ${failed[0].error!.message}`,
    };
  } else if (results.length < origins.length) {
    stoppedEarly = {
      code: 'DEADLINE_EXCEEDED',
      message: `time bound reached after ${results.length} of ${origins.length} origins`,
    };
  }
  const details: Details = {
    method: params.method,
    requestHeaders: params.requestHeaders,
    credentials: params.credentials,
    origins: results,
    serverLog,
    samples,
  };
  return {
    summary: summarize(samples, client.connections.length, durationMs),
    details,
    findings: applyRules(CORS_RULES, details, { region: job.region, target: job.target.name, probe: job.probe }),
    error: stoppedEarly,
  };
};
