// The cors probe's findings: one small rule per finding code, read from the job's details (the
// answers to each origin and the browser's verdict on them). CORS_RULES is the order they run in.
import { finding, type FindingRule } from '../../contracts/findings.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import { thousands } from '../../common/plural.js';

type Details = ProbeDetails<'cors'>;
type OriginResult = Details['origins'][number];

export const okStatus = (status: number | undefined) => status !== undefined && status >= 200 && status < 300;
const quote = (value: string | undefined) => (value === undefined ? 'none' : value);
/** Origins whose preflight and GET both got an answer: the only ones a rule judges. */
const answered = (details: Details) => details.origins.filter((o) => !o.preflight.error && !o.get.error);

/** CORS_WILDCARD_WITH_CREDENTIALS: `*` with Allow-Credentials: true, on the preflight or the GET. */
export const wildcardWithCredentials: FindingRule<Details> = (details, where) => {
  const wildcard = answered(details).flatMap((o) =>
    (['preflight', 'get'] as const)
      .filter((kind) => o[kind].allowOrigin === '*' && o[kind].allowCredentials?.toLowerCase() === 'true')
      .map((kind) => `${kind === 'get' ? 'GET' : 'preflight'} from ${o.origin}`),
  );
  if (wildcard.length === 0) return undefined;
  return finding(
    'CORS_WILDCARD_WITH_CREDENTIALS',
    where,
    `Access-Control-Allow-Origin: * with Access-Control-Allow-Credentials: true on ${wildcard.join(', ')}; browsers refuse such an answer for credentialed requests`,
    { answers: wildcard.length },
  );
};

/** CORS_REFLECTS_ANY_ORIGIN: the made-up origin (no allowlist holds it) was echoed back. */
export const reflectsAnyOrigin: FindingRule<Details> = (details, where) => {
  const origins = answered(details);
  const random = origins.find((o) => o.role === 'random');
  const reflected = origins.filter(
    (o) => o.role !== 'allowed' && (o.preflight.allowOrigin === o.origin || o.get.allowOrigin === o.origin),
  );
  if (!random || !reflected.includes(random)) return undefined;
  const credentials = random.get.allowCredentials === 'true' || random.preflight.allowCredentials === 'true';
  return finding(
    'CORS_REFLECTS_ANY_ORIGIN',
    where,
    `the made-up origin ${random.origin} was echoed back in Access-Control-Allow-Origin` +
      (credentials ? ' with Access-Control-Allow-Credentials: true, so any site can read logged-in responses' : '') +
      (reflected.length > 1
        ? `; so were ${reflected
            .filter((o) => o !== random)
            .map((o) => o.origin)
            .join(', ')}`
        : ''),
    { origin: random.origin, withCredentials: credentials },
  );
};

/**
 * CORS_MISSING_VARY_ORIGIN. The GET is what caches store; its Access-Control-Allow-Origin depends
 * on Origin when it names an origin, or when origins get different answers.
 */
export const missingVaryOrigin: FindingRule<Details> = (details, where) => {
  const origins = answered(details);
  const getOrigins = new Set(origins.map((o) => o.get.allowOrigin ?? ''));
  const varies =
    getOrigins.size > 1 || origins.some((o) => o.get.allowOrigin !== undefined && o.get.allowOrigin !== '*');
  const noVary = origins.filter((o) => !/(^|,)\s*(origin|\*)\s*(,|$)/i.test(o.get.vary ?? ''));
  if (!varies || noVary.length === 0) return undefined;
  return finding(
    'CORS_MISSING_VARY_ORIGIN',
    where,
    `GET answers depend on the Origin (${origins.map((o) => `${o.origin}: ${quote(o.get.allowOrigin)}`).join('; ')}) ` +
      `but ${noVary.length} of ${origins.length} lack Vary: Origin (Vary: ${quote(noVary[0].get.vary)})`,
    { answers: origins.length, withoutVary: noVary.length },
  );
};

/** Origins whose preflight let them in: the method and header rules judge only these. */
const preflightAllowed = (details: Details) => answered(details).filter((o) => o.verdict.preflightAllowsOrigin);

/** CORS_PREFLIGHT_MISSING_METHOD: a preflight let the origin in but not the page's method. */
export const preflightMissingMethod: FindingRule<Details> = (details, where) => {
  const noMethod = preflightAllowed(details).filter((o) => !o.verdict.methodAllowed);
  if (noMethod.length === 0) return undefined;
  return finding(
    'CORS_PREFLIGHT_MISSING_METHOD',
    where,
    `the preflight for ${details.method} from ${noMethod[0].origin} answered Access-Control-Allow-Methods: ${quote(noMethod[0].preflight.allowMethods)}`,
    { method: details.method, allowMethods: noMethod[0].preflight.allowMethods ?? '' },
  );
};

/** CORS_PREFLIGHT_MISSING_HEADER: a preflight let the origin in but not every header the page sends. */
export const preflightMissingHeader: FindingRule<Details> = (details, where) => {
  const noHeader = preflightAllowed(details).filter((o) => o.verdict.headersMissing.length > 0);
  if (noHeader.length === 0) return undefined;
  return finding(
    'CORS_PREFLIGHT_MISSING_HEADER',
    where,
    `the preflight from ${noHeader[0].origin} asking for ${details.requestHeaders.join(', ')} answered Access-Control-Allow-Headers: ${quote(noHeader[0].preflight.allowHeaders)} ` +
      `(missing: ${noHeader[0].verdict.headersMissing.join(', ')})`,
    {
      missing: noHeader[0].verdict.headersMissing.join(','),
      allowHeaders: noHeader[0].preflight.allowHeaders ?? '',
    },
  );
};

/** Allowed origins whose preflight refused them. */
const refusedAllowed = (details: Details) =>
  answered(details).filter((o) => o.role === 'allowed' && !o.verdict.preflightAllowsOrigin);
/**
 * With credentials, an origin the server already echoes lacks only Allow-Credentials: true; the
 * allowlist is not what to fix. (A wildcard is refused for another reason: it must echo the origin.)
 */
const lacksOnlyCredentials = (details: Details, o: OriginResult) =>
  details.credentials &&
  okStatus(o.preflight.status) &&
  o.preflight.allowOrigin === o.origin &&
  o.preflight.allowCredentials !== 'true';

/** CORS_CREDENTIALS_NOT_ALLOWED: an allowed origin echoed, but without Allow-Credentials: true. */
export const credentialsNotAllowed: FindingRule<Details> = (details, where) => {
  const o = refusedAllowed(details).find((r) => lacksOnlyCredentials(details, r));
  if (!o) return undefined;
  return finding(
    'CORS_CREDENTIALS_NOT_ALLOWED',
    where,
    `the preflight from ${o.origin} answered Access-Control-Allow-Origin: ${quote(o.preflight.allowOrigin)} with Access-Control-Allow-Credentials: ${quote(o.preflight.allowCredentials)}; the page sends credentials, so the browser refuses it`,
    {
      origin: o.origin,
      allowOrigin: o.preflight.allowOrigin ?? '',
      allowCredentials: o.preflight.allowCredentials ?? '',
    },
  );
};

/** CORS_ALLOWED_ORIGIN_REFUSED: an allowed origin refused for any other reason than credentials. */
export const allowedOriginRefused: FindingRule<Details> = (details, where) => {
  const o = refusedAllowed(details).find((r) => !lacksOnlyCredentials(details, r));
  if (!o) return undefined;
  return finding(
    'CORS_ALLOWED_ORIGIN_REFUSED',
    where,
    `the preflight from ${o.origin} answered ${o.preflight.status} with Access-Control-Allow-Origin: ${quote(o.preflight.allowOrigin)}` +
      (details.credentials
        ? ` and Access-Control-Allow-Credentials: ${quote(o.preflight.allowCredentials)} (the page sends credentials)`
        : ''),
    { origin: o.origin, status: o.preflight.status ?? 0 },
  );
};

/** CORS_REFUSED_ORIGIN_STILL_SERVED: a refused origin's GET got the body, only unreadable to the page. */
export const refusedOriginStillServed: FindingRule<Details> = (details, where) => {
  const origins = answered(details);
  const allowedGet = origins.find((o) => o.role === 'allowed' && o.verdict.getReadable);
  const served = origins.filter(
    (o) => o.role === 'refused' && okStatus(o.get.status) && o.get.bodyBytes > 0 && !o.verdict.getReadable,
  );
  if (served.length === 0) return undefined;
  const o = served[0];
  const log =
    details.serverLog === null
      ? ''
      : o.get.ranOnServer
        ? `; the server's log (${details.serverLog.path}) shows it ran`
        : `; the server's log (${details.serverLog.path}) does not show it`;
  return finding(
    'CORS_REFUSED_ORIGIN_STILL_SERVED',
    where,
    `GET from ${served.map((s) => s.origin).join(' and ')}: ${o.get.status} with ${thousands(o.get.bodyBytes)} B` +
      (allowedGet ? ` (the allowed ${allowedGet.origin} got ${thousands(allowedGet.get.bodyBytes)} B)` : '') +
      ` and no Access-Control-Allow-Origin for it${log}: only the browser hides the response`,
    {
      origins: served.length,
      bodyBytes: o.get.bodyBytes,
      ...(o.get.ranOnServer !== undefined ? { ranOnServer: o.get.ranOnServer } : {}),
    },
  );
};

export const CORS_RULES: readonly FindingRule<Details>[] = [
  wildcardWithCredentials,
  reflectsAnyOrigin,
  missingVaryOrigin,
  preflightMissingMethod,
  preflightMissingHeader,
  credentialsNotAllowed,
  allowedOriginRefused,
  refusedOriginStillServed,
];
