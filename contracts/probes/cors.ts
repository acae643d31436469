// The `cors` probe: does the preflight answer what a browser needs, and what does a refused
// origin still get?
import { z } from 'zod';
import { probeErrorSchema, requestSampleSchema } from '../common.js';
import { defineProbe, schemeOf, sequential, EVERY_REQUEST_SETTING } from './define.js';

/** An origin as a browser sends it: scheme://host[:port], nothing else. */
const originSchema = z.string().superRefine((value, ctx) => {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== value) {
    ctx.addIssue({
      code: 'custom',
      message: `"${value}" is not an origin (scheme://host[:port], no path or trailing slash)`,
    });
  }
});

/** The probe tags each GET with a unique id in this header, to find it in the server's request log. */
export const REQUEST_ID_HEADER = 'x-probefleet-request-id';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const CORS_ROLES = ['allowed', 'refused', 'random'] as const;

/** The CORS-relevant headers of one response. Absent header = field absent. */
export const corsAnswerSchema = z.strictObject({
  status: z.int().optional(),
  allowOrigin: z.string().optional(),
  allowCredentials: z.string().optional(),
  allowMethods: z.string().optional(),
  allowHeaders: z.string().optional(),
  maxAge: z.string().optional(),
  vary: z.string().optional(),
  error: probeErrorSchema.optional(),
});
export type CorsAnswer = z.infer<typeof corsAnswerSchema>;

export const corsOriginSchema = z.strictObject({
  origin: z.string(),
  /** What the plan says this origin should be; `random` is a made-up origin no allowlist holds. */
  role: z.enum(CORS_ROLES),
  preflight: corsAnswerSchema,
  get: corsAnswerSchema.extend({
    bodyBytes: z.int().nonnegative(),
    /** Sent as X-Probefleet-Request-Id, to find this request in the server's log. */
    requestId: z.string(),
    /** The server's log shows this request ran; absent when no log was read. */
    ranOnServer: z.boolean().optional(),
  }),
  /** What a browser would conclude from the preflight. */
  verdict: z.strictObject({
    /** The preflight let this origin send the request (status ok and origin allowed). */
    preflightAllowsOrigin: z.boolean(),
    /** The method is allowed (or CORS-safelisted). */
    methodAllowed: z.boolean(),
    /** Requested headers the preflight did not allow. */
    headersMissing: z.array(z.string()),
    /** The page may read the GET's response. */
    getReadable: z.boolean(),
  }),
});
export type CorsOriginResult = z.infer<typeof corsOriginSchema>;

export const corsProbe = defineProbe({
  kind: 'cors',
  summary:
    'Preflight and simple GET per allowed, refused and random origin: what a browser needs, and what the server still runs',
  question: 'does the preflight answer what a browser needs, and what does a refused origin still get?',
  jobs: 'one job per target; parameters `allowedOrigins`, `refusedOrigins`, `method`, `requestHeaders`, `credentials`, `serverLogPath`',
  findings: {
    CORS_WILDCARD_WITH_CREDENTIALS: {
      severity: 'warning',
      title: 'Access-Control-Allow-Origin: * together with Allow-Credentials: true',
      situation: 'CORS answers Access-Control-Allow-Origin: * with Access-Control-Allow-Credentials: true',
      advice:
        'Browsers refuse credentials with a wildcard: echo the one allowed origin (from an allowlist) with Allow-Credentials, and Vary: Origin',
      when: 'an answer has `Access-Control-Allow-Origin: *` with `Access-Control-Allow-Credentials: true`',
    },
    CORS_REFLECTS_ANY_ORIGIN: {
      severity: 'critical',
      title: 'CORS echoes any Origin back',
      situation: 'CORS echoes any Origin back in Access-Control-Allow-Origin',
      advice:
        'Check the Origin against an allowlist before echoing it; a reflected origin lets every site read the responses (logged-in ones too, with credentials)',
      when: 'a made-up origin (`https://probefleet-<random>.example`) is echoed in `Access-Control-Allow-Origin`',
    },
    CORS_MISSING_VARY_ORIGIN: {
      severity: 'warning',
      title: 'The CORS answer depends on Origin, without Vary: Origin',
      situation: 'Access-Control-Allow-Origin depends on the Origin, but responses lack Vary: Origin',
      advice:
        "Send Vary: Origin whenever the answer depends on the request's Origin, so a cache or CDN never serves one origin's headers to another",
      when: 'GET answers name an origin or differ by origin, and one lacks `Vary: Origin`',
    },
    CORS_PREFLIGHT_MISSING_METHOD: {
      severity: 'warning',
      title: 'The preflight does not allow the method the page sends',
      situation: 'The CORS preflight does not allow the method the page needs',
      advice: 'List the method in Access-Control-Allow-Methods; until then the browser never sends the request',
      when: 'a preflight that allows the origin does not allow `method` (GET, HEAD and POST need no permission)',
    },
    CORS_PREFLIGHT_MISSING_HEADER: {
      severity: 'warning',
      title: 'The preflight does not allow a header the page sends',
      situation: 'The CORS preflight does not allow a request header the page needs',
      advice:
        'List the header in Access-Control-Allow-Headers (a wildcard does not cover Authorization, nor anything with credentials)',
      when: 'a preflight that allows the origin does not allow one of `requestHeaders`',
    },
    CORS_ALLOWED_ORIGIN_REFUSED: {
      severity: 'warning',
      title: 'An origin that should be allowed is refused',
      situation: 'An origin the API should allow gets no Access-Control-Allow-Origin',
      advice:
        "Add the origin to the server's allowlist exactly as the browser sends it (scheme, host and port, no trailing slash)",
      when: 'the preflight for one of `allowedOrigins` does not let it through (with `credentials`, a wildcard does not count), and it is not only the missing Allow-Credentials',
    },
    CORS_CREDENTIALS_NOT_ALLOWED: {
      severity: 'warning',
      title: 'The origin is allowed, but not with credentials',
      situation:
        'A page that sends credentials (cookies, Authorization) is refused: the answer names its origin but lacks Access-Control-Allow-Credentials: true',
      advice:
        'Answer Access-Control-Allow-Credentials: true with the exact origin echoed (never *), and Vary: Origin; the allowlist already has the origin',
      when: 'with `credentials`, the preflight echoes one of `allowedOrigins` but without `Access-Control-Allow-Credentials: true` (the fix is that header, not the allowlist)',
    },
    CORS_REFUSED_ORIGIN_STILL_SERVED: {
      severity: 'info',
      title: 'A refused origin still gets the full response: CORS protects nothing on the server',
      situation: 'Unwanted callers must be blocked (CORS refused the origin, yet the request ran)',
      advice:
        'Authentication, CSRF tokens and rate limits: CORS only decides what a browser lets the page read; curl, scripts and apps ignore it',
      when: "(info) a GET from one of `refusedOrigins` got a 2xx and a body a browser would hide; with `serverLogPath`, whether the server's log shows it ran",
    },
  },
  params: z.strictObject({
    /** Origins the API should allow, e.g. https://app.example. */
    allowedOrigins: z.array(originSchema).max(20).default([]),
    /** Origins the API should refuse, e.g. https://evil.example. */
    refusedOrigins: z.array(originSchema).max(20).default([]),
    /** The method the page wants to send (Access-Control-Request-Method). */
    method: z.string().regex(TOKEN, 'not an HTTP method').default('PUT'),
    /** Non-safelisted headers the page sends (Access-Control-Request-Headers). */
    requestHeaders: z.array(z.string().regex(TOKEN, 'not a valid header name')).max(20).default(['content-type']),
    /** The page sends cookies or Authorization: a wildcard then allows nothing. */
    credentials: z.boolean().default(false),
    /** A path on the target that returns the server's request log (any text); the probe looks for its request ids in it. */
    serverLogPath: z
      .string()
      .regex(
        /^\/[\x21-\x7e]*$/,
        'must be a path starting with "/", of visible ASCII characters (percent-encode the rest)',
      )
      .optional(),
    /** Per-request time bound. */
    timeoutMs: z.int().min(1).max(120_000).default(10_000),
  }),
  variant: z.strictObject({ scheme: z.enum(['http', 'https']) }),
  details: z.strictObject({
    method: z.string(),
    requestHeaders: z.array(z.string()),
    credentials: z.boolean(),
    origins: z.array(corsOriginSchema),
    serverLog: z
      .strictObject({ path: z.string(), status: z.int().optional(), error: probeErrorSchema.optional() })
      .nullable(),
    samples: z.array(requestSampleSchema),
  }),
  request: () => EVERY_REQUEST_SETTING,
  variants: (_params, target) => [{ scheme: schemeOf(target.url) }],
  // Per origin (the plan's and one made up) a preflight and a request; then the server's log.
  demands: (params) => {
    const origins = params.allowedOrigins.length + params.refusedOrigins.length + 1;
    return sequential({ value: 2 * origins + 1, param: 'allowedOrigins', how: `${origins} origins x 2 + 1` });
  },
});
