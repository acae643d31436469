// `cors`: does the preflight answer what a browser needs, and what does a refused origin still get?
// Per origin (the plan's allowed and refused ones, plus a made-up one no allowlist holds): a
// preflight (OPTIONS with Origin and Access-Control-Request-*), then the simple GET a page would
// send, tagged with a request id. The browser's checks (Fetch Standard) are applied to the
// answers here; no browser runs. An optional server log shows which GETs the server ran.
import { randomBytes, randomUUID } from 'node:crypto';
import type { ProbeError, RequestSample } from '../../contracts/common.js';
import { finding, type Finding } from '../../contracts/findings.js';
import type { JobOf } from '../../contracts/job.js';
import { REQUEST_ID_HEADER, type CorsAnswer, type CorsOriginResult } from '../../contracts/probes/cors.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { collectBody, type BodyRead } from '../http/body.js';
import { MAX_CONSECUTIVE_FAILURES, summarize } from '../http/sequence.js';
import { performance } from 'node:perf_hooks';
import { TimedHttpClient, type TimedExchange, type TimedRequestOptions } from '../http/timed-client.js';
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
const okStatus = (status: number | undefined) => status !== undefined && status >= 200 && status < 300;

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

export const corsProbe: Probe<'cors'> = async (job, { signal, targetPolicy, altSvc }) => {
  const { params } = job;
  const origins: { origin: string; role: CorsOriginResult['role'] }[] = [
    ...params.allowedOrigins.map((origin) => ({ origin, role: 'allowed' as const })),
    ...params.refusedOrigins.map((origin) => ({ origin, role: 'refused' as const })),
    // Reserved TLD: no allowlist can hold it, so an echo means any origin is echoed.
    { origin: `https://probefleet-${randomBytes(4).toString('hex')}.example`, role: 'random' as const },
  ];
  const client = new TimedHttpClient({ target: job.target, timeoutMs: params.timeoutMs, policy: targetPolicy, altSvc });
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
      const got = await send({ headers: { origin, [REQUEST_ID_HEADER]: requestId } });
      const get = { ...answerOf(got), bodyBytes: got.sample.bodyBytes, requestId };
      results.push({ origin, role, preflight, get, verdict: verdictOf(preflight, get, origin, params) });
    }
    if (params.serverLogPath && results.length > 0 && !signal.aborted) {
      const log = await send({ path: params.serverLogPath, consumeBody: collectBody(MAX_LOG_BYTES) });
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
    findings: corsFindings(job, details),
    error: stoppedEarly,
  };
};

const quote = (value: string | undefined) => (value === undefined ? 'none' : value);

function corsFindings(job: JobOf<'cors'>, details: Details): Finding[] {
  const where = { region: job.region, target: job.target.name, probe: job.probe };
  const findings: Finding[] = [];
  const answered = details.origins.filter((o) => !o.preflight.error && !o.get.error);

  const wildcard = answered.flatMap((o) =>
    (['preflight', 'get'] as const)
      .filter((kind) => o[kind].allowOrigin === '*' && o[kind].allowCredentials?.toLowerCase() === 'true')
      .map((kind) => `${kind === 'get' ? 'GET' : 'preflight'} from ${o.origin}`),
  );
  if (wildcard.length > 0) {
    findings.push(
      finding(
        'CORS_WILDCARD_WITH_CREDENTIALS',
        where,
        `Access-Control-Allow-Origin: * with Access-Control-Allow-Credentials: true on ${wildcard.join(', ')}; browsers refuse such an answer for credentialed requests`,
        {
          answers: wildcard.length,
        },
      ),
    );
  }

  const random = answered.find((o) => o.role === 'random');
  const reflected = answered.filter(
    (o) => o.role !== 'allowed' && (o.preflight.allowOrigin === o.origin || o.get.allowOrigin === o.origin),
  );
  if (random && reflected.includes(random)) {
    const credentials = random.get.allowCredentials === 'true' || random.preflight.allowCredentials === 'true';
    findings.push(
      finding(
        'CORS_REFLECTS_ANY_ORIGIN',
        where,
        `the made-up origin ${random.origin} was echoed back in Access-Control-Allow-Origin` +
          (credentials
            ? ' with Access-Control-Allow-Credentials: true, so any site can read logged-in responses'
            : '') +
          (reflected.length > 1
            ? `; so were ${reflected
                .filter((o) => o !== random)
                .map((o) => o.origin)
                .join(', ')}`
            : ''),
        { origin: random.origin, withCredentials: credentials },
      ),
    );
  }

  // The GET is what caches store; its Access-Control-Allow-Origin depends on Origin when it
  // names an origin, or when origins get different answers.
  const getOrigins = new Set(answered.map((o) => o.get.allowOrigin ?? ''));
  const varies =
    getOrigins.size > 1 || answered.some((o) => o.get.allowOrigin !== undefined && o.get.allowOrigin !== '*');
  const noVary = answered.filter((o) => !/(^|,)\s*(origin|\*)\s*(,|$)/i.test(o.get.vary ?? ''));
  if (varies && noVary.length > 0) {
    findings.push(
      finding(
        'CORS_MISSING_VARY_ORIGIN',
        where,
        `GET answers depend on the Origin (${answered.map((o) => `${o.origin}: ${quote(o.get.allowOrigin)}`).join('; ')}) ` +
          `but ${noVary.length} of ${answered.length} lack Vary: Origin (Vary: ${quote(noVary[0].get.vary)})`,
        { answers: answered.length, withoutVary: noVary.length },
      ),
    );
  }

  const preflightAllowed = answered.filter((o) => o.verdict.preflightAllowsOrigin);
  const noMethod = preflightAllowed.filter((o) => !o.verdict.methodAllowed);
  if (noMethod.length > 0) {
    findings.push(
      finding(
        'CORS_PREFLIGHT_MISSING_METHOD',
        where,
        `the preflight for ${details.method} from ${noMethod[0].origin} answered Access-Control-Allow-Methods: ${quote(noMethod[0].preflight.allowMethods)}`,
        { method: details.method, allowMethods: noMethod[0].preflight.allowMethods ?? '' },
      ),
    );
  }
  const noHeader = preflightAllowed.filter((o) => o.verdict.headersMissing.length > 0);
  if (noHeader.length > 0) {
    findings.push(
      finding(
        'CORS_PREFLIGHT_MISSING_HEADER',
        where,
        `the preflight from ${noHeader[0].origin} asking for ${details.requestHeaders.join(', ')} answered Access-Control-Allow-Headers: ${quote(noHeader[0].preflight.allowHeaders)} ` +
          `(missing: ${noHeader[0].verdict.headersMissing.join(', ')})`,
        {
          missing: noHeader[0].verdict.headersMissing.join(','),
          allowHeaders: noHeader[0].preflight.allowHeaders ?? '',
        },
      ),
    );
  }

  const refusedAllowed = answered.filter((o) => o.role === 'allowed' && !o.verdict.preflightAllowsOrigin);
  // With credentials, an origin the server already echoes lacks only Allow-Credentials: true; the
  // allowlist is not what to fix. (A wildcard is refused for another reason: it must echo the origin.)
  const namesOrigin = (o: (typeof answered)[number]) =>
    okStatus(o.preflight.status) && o.preflight.allowOrigin === o.origin && o.preflight.allowCredentials !== 'true';
  const noCredentials = details.credentials ? refusedAllowed.filter(namesOrigin) : [];
  if (noCredentials.length > 0) {
    const o = noCredentials[0];
    findings.push(
      finding(
        'CORS_CREDENTIALS_NOT_ALLOWED',
        where,
        `the preflight from ${o.origin} answered Access-Control-Allow-Origin: ${quote(o.preflight.allowOrigin)} with Access-Control-Allow-Credentials: ${quote(o.preflight.allowCredentials)}; the page sends credentials, so the browser refuses it`,
        {
          origin: o.origin,
          allowOrigin: o.preflight.allowOrigin ?? '',
          allowCredentials: o.preflight.allowCredentials ?? '',
        },
      ),
    );
  }
  const notListed = refusedAllowed.filter((o) => !noCredentials.includes(o));
  if (notListed.length > 0) {
    const o = notListed[0];
    findings.push(
      finding(
        'CORS_ALLOWED_ORIGIN_REFUSED',
        where,
        `the preflight from ${o.origin} answered ${o.preflight.status} with Access-Control-Allow-Origin: ${quote(o.preflight.allowOrigin)}` +
          (details.credentials
            ? ` and Access-Control-Allow-Credentials: ${quote(o.preflight.allowCredentials)} (the page sends credentials)`
            : ''),
        { origin: o.origin, status: o.preflight.status ?? 0 },
      ),
    );
  }

  const allowedGet = answered.find((o) => o.role === 'allowed' && o.verdict.getReadable);
  const served = answered.filter(
    (o) => o.role === 'refused' && okStatus(o.get.status) && o.get.bodyBytes > 0 && !o.verdict.getReadable,
  );
  if (served.length > 0) {
    const o = served[0];
    const log =
      details.serverLog === null
        ? ''
        : o.get.ranOnServer
          ? `; the server's log (${details.serverLog.path}) shows it ran`
          : `; the server's log (${details.serverLog.path}) does not show it`;
    findings.push(
      finding(
        'CORS_REFUSED_ORIGIN_STILL_SERVED',
        where,
        `GET from ${served.map((s) => s.origin).join(' and ')}: ${o.get.status} with ${o.get.bodyBytes.toLocaleString('en-US')} B` +
          (allowedGet
            ? ` (the allowed ${allowedGet.origin} got ${allowedGet.get.bodyBytes.toLocaleString('en-US')} B)`
            : '') +
          ` and no Access-Control-Allow-Origin for it${log}: only the browser hides the response`,
        {
          origins: served.length,
          bodyBytes: o.get.bodyBytes,
          ...(o.get.ranOnServer !== undefined ? { ranOnServer: o.get.ranOnServer } : {}),
        },
      ),
    );
  }
  return findings;
}
