// The cors probe's finding rules (worker/probes/cors-findings.ts) as a table: a server's answers
// in, the finding out or none. Each case starts from a well-behaved server (allowlist of one
// origin, Vary: Origin, refused origins get nothing) and changes what the case is about.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyRules } from '../../contracts/findings.js';
import type { CorsAnswer, CorsOriginResult } from '../../contracts/probes/cors.js';
import type { ProbeDetails } from '../../contracts/probes/index.js';
import {
  allowedOriginRefused,
  CORS_RULES,
  credentialsNotAllowed,
  missingVaryOrigin,
  preflightMissingHeader,
  preflightMissingMethod,
  reflectsAnyOrigin,
  refusedOriginStillServed,
  wildcardWithCredentials,
} from '../../worker/probes/cors-findings.js';
import { type RuleCase, testRules } from '../helpers/finding-rules.js';

type Details = ProbeDetails<'cors'>;
const where = { region: 'local', target: 'api', probe: 'cors' };
const APP = 'https://app.example';
const EVIL = 'https://evil.example';
const RANDOM = 'https://probefleet-0a1b2c3d.example';

interface OriginChanges {
  preflight?: Partial<CorsAnswer>;
  get?: Partial<CorsOriginResult['get']>;
  verdict?: Partial<CorsOriginResult['verdict']>;
}

/** The allowed origin, echoed with Vary: Origin, and readable. */
const allowed = (c: OriginChanges = {}): CorsOriginResult => ({
  origin: APP,
  role: 'allowed',
  preflight: { status: 204, allowOrigin: APP, allowMethods: 'GET, POST', vary: 'Origin', ...c.preflight },
  get: { status: 200, allowOrigin: APP, vary: 'Origin', bodyBytes: 1000, requestId: 'a', ...c.get },
  verdict: { preflightAllowsOrigin: true, methodAllowed: true, headersMissing: [], getReadable: true, ...c.verdict },
});
/** A refused origin (the plan's, or the made-up one): no Access-Control-Allow-Origin, a 403 without a body. */
const refused = (origin: string, role: 'refused' | 'random', c: OriginChanges = {}): CorsOriginResult => ({
  origin,
  role,
  preflight: { status: 204, vary: 'Origin', ...c.preflight },
  get: { status: 403, vary: 'Origin', bodyBytes: 0, requestId: role, ...c.get },
  verdict: { preflightAllowsOrigin: false, methodAllowed: true, headersMissing: [], getReadable: false, ...c.verdict },
});

function details(
  changes: { app?: OriginChanges; evil?: OriginChanges; random?: OriginChanges } = {},
  job: Partial<Omit<Details, 'origins'>> = {},
): Details {
  return {
    method: 'GET',
    requestHeaders: [],
    credentials: false,
    serverLog: null,
    samples: [],
    ...job,
    origins: [allowed(changes.app), refused(EVIL, 'refused', changes.evil), refused(RANDOM, 'random', changes.random)],
  };
}

type Case = RuleCase<Details>;

const cases: Case[] = [
  {
    name: '* with credentials on the GET',
    rule: wildcardWithCredentials,
    input: details({ app: { get: { allowOrigin: '*', allowCredentials: 'TRUE' } } }),
    expected: {
      code: 'CORS_WILDCARD_WITH_CREDENTIALS',
      evidence:
        /^Access-Control-Allow-Origin: \* with Access-Control-Allow-Credentials: true on GET from https:\/\/app\.example;/,
      data: { answers: 1 },
    },
  },
  {
    name: '* on the preflight and the GET of two origins',
    rule: wildcardWithCredentials,
    input: details({
      app: { preflight: { allowOrigin: '*', allowCredentials: 'true' } },
      evil: { get: { allowOrigin: '*', allowCredentials: 'true' } },
    }),
    expected: {
      code: 'CORS_WILDCARD_WITH_CREDENTIALS',
      evidence: /on preflight from https:\/\/app\.example, GET from https:\/\/evil\.example;/,
      data: { answers: 2 },
    },
  },
  {
    name: '* without credentials is fine',
    rule: wildcardWithCredentials,
    input: details({ app: { get: { allowOrigin: '*' } } }),
  },
  {
    name: '* with credentials on an origin whose GET failed is not judged',
    rule: wildcardWithCredentials,
    input: details({
      app: { get: { allowOrigin: '*', allowCredentials: 'true', error: { code: 'BODY_TIMEOUT', message: 'slow' } } },
    }),
  },
  {
    name: 'the made-up origin echoed',
    rule: reflectsAnyOrigin,
    input: details({ random: { get: { allowOrigin: RANDOM } } }),
    expected: {
      code: 'CORS_REFLECTS_ANY_ORIGIN',
      evidence:
        /^the made-up origin https:\/\/probefleet-0a1b2c3d\.example was echoed back in Access-Control-Allow-Origin$/,
      data: { origin: RANDOM, withCredentials: false },
    },
  },
  {
    name: 'the made-up origin echoed with credentials by the preflight, the refused one too',
    rule: reflectsAnyOrigin,
    input: details({
      random: { preflight: { allowOrigin: RANDOM, allowCredentials: 'true' } },
      evil: { get: { allowOrigin: EVIL } },
    }),
    expected: {
      code: 'CORS_REFLECTS_ANY_ORIGIN',
      evidence:
        /with Access-Control-Allow-Credentials: true, so any site can read logged-in responses; so were https:\/\/evil\.example$/,
      data: { origin: RANDOM, withCredentials: true },
    },
  },
  {
    name: 'only the refused origin echoed: an allowlist mistake, not a reflection',
    rule: reflectsAnyOrigin,
    input: details({ evil: { get: { allowOrigin: EVIL } } }),
  },
  {
    name: 'an answer naming the origin without Vary: Origin',
    rule: missingVaryOrigin,
    input: details({ app: { get: { vary: undefined } } }),
    expected: {
      code: 'CORS_MISSING_VARY_ORIGIN',
      evidence:
        /^GET answers depend on the Origin \(https:\/\/app\.example: https:\/\/app\.example; https:\/\/evil\.example: none; .*\) but 1 of 3 lack Vary: Origin \(Vary: none\)$/,
      data: { answers: 3, withoutVary: 1 },
    },
  },
  {
    name: 'Vary: Accept-Encoding is not Vary: Origin',
    rule: missingVaryOrigin,
    input: details({ evil: { get: { vary: 'Accept-Encoding' } }, random: { get: { vary: 'Accept-Encoding' } } }),
    expected: {
      code: 'CORS_MISSING_VARY_ORIGIN',
      evidence: /but 2 of 3 lack Vary: Origin \(Vary: Accept-Encoding\)$/,
      data: { answers: 3, withoutVary: 2 },
    },
  },
  {
    name: 'Vary: * covers Origin',
    rule: missingVaryOrigin,
    input: details({ app: { get: { vary: 'Accept-Encoding, *' } } }),
  },
  {
    name: 'the same * for every origin depends on nothing',
    rule: missingVaryOrigin,
    input: details({
      app: { get: { allowOrigin: '*', vary: undefined } },
      evil: { get: { allowOrigin: '*', vary: undefined } },
      random: { get: { allowOrigin: '*', vary: undefined } },
    }),
  },
  {
    name: "a preflight that lets the origin in but not the page's method",
    rule: preflightMissingMethod,
    input: details({ app: { verdict: { methodAllowed: false } } }, { method: 'PUT' }),
    expected: {
      code: 'CORS_PREFLIGHT_MISSING_METHOD',
      evidence: /^the preflight for PUT from https:\/\/app\.example answered Access-Control-Allow-Methods: GET, POST$/,
      data: { method: 'PUT', allowMethods: 'GET, POST' },
    },
  },
  {
    name: 'no method for an origin the preflight refused anyway',
    rule: preflightMissingMethod,
    input: details({ evil: { verdict: { methodAllowed: false } } }, { method: 'PUT' }),
  },
  {
    name: 'a preflight without a header the page sends',
    rule: preflightMissingHeader,
    input: details(
      { app: { preflight: { allowHeaders: '*' }, verdict: { headersMissing: ['Authorization'] } } },
      { requestHeaders: ['Content-Type', 'Authorization'] },
    ),
    expected: {
      code: 'CORS_PREFLIGHT_MISSING_HEADER',
      evidence:
        /^the preflight from https:\/\/app\.example asking for Content-Type, Authorization answered Access-Control-Allow-Headers: \* \(missing: Authorization\)$/,
      data: { missing: 'Authorization', allowHeaders: '*' },
    },
  },
  {
    name: 'every header allowed',
    rule: preflightMissingHeader,
    input: details({ app: { preflight: { allowHeaders: 'content-type' } } }, { requestHeaders: ['Content-Type'] }),
  },
  {
    name: 'with credentials, the origin echoed without Allow-Credentials',
    rule: credentialsNotAllowed,
    input: details({ app: { verdict: { preflightAllowsOrigin: false } } }, { credentials: true }),
    expected: {
      code: 'CORS_CREDENTIALS_NOT_ALLOWED',
      evidence:
        /^the preflight from https:\/\/app\.example answered Access-Control-Allow-Origin: https:\/\/app\.example with Access-Control-Allow-Credentials: none; the page sends credentials/,
      data: { origin: APP, allowOrigin: APP, allowCredentials: '' },
    },
  },
  {
    name: 'with credentials, an origin not echoed at all is an allowlist matter',
    rule: credentialsNotAllowed,
    input: details(
      { app: { preflight: { allowOrigin: undefined }, verdict: { preflightAllowsOrigin: false } } },
      { credentials: true },
    ),
  },
  {
    name: 'without credentials, a refused allowed origin is an allowlist matter',
    rule: credentialsNotAllowed,
    input: details({ app: { verdict: { preflightAllowsOrigin: false } } }),
  },
  {
    name: 'an allowed origin without Access-Control-Allow-Origin',
    rule: allowedOriginRefused,
    input: details({ app: { preflight: { allowOrigin: undefined }, verdict: { preflightAllowsOrigin: false } } }),
    expected: {
      code: 'CORS_ALLOWED_ORIGIN_REFUSED',
      evidence: /^the preflight from https:\/\/app\.example answered 204 with Access-Control-Allow-Origin: none$/,
      data: { origin: APP, status: 204 },
    },
  },
  {
    name: 'an allowed origin refused with a 403, credentials asked',
    rule: allowedOriginRefused,
    input: details(
      { app: { preflight: { status: 403, allowOrigin: undefined }, verdict: { preflightAllowsOrigin: false } } },
      { credentials: true },
    ),
    expected: {
      code: 'CORS_ALLOWED_ORIGIN_REFUSED',
      evidence:
        /answered 403 with Access-Control-Allow-Origin: none and Access-Control-Allow-Credentials: none \(the page sends credentials\)$/,
      data: { origin: APP, status: 403 },
    },
  },
  {
    name: 'with credentials, an echoed origin lacking only Allow-Credentials is the other finding',
    rule: allowedOriginRefused,
    input: details({ app: { verdict: { preflightAllowsOrigin: false } } }, { credentials: true }),
  },
  {
    name: 'a refused origin still gets the body',
    rule: refusedOriginStillServed,
    input: details({ evil: { get: { status: 200, bodyBytes: 5000 } } }),
    expected: {
      code: 'CORS_REFUSED_ORIGIN_STILL_SERVED',
      evidence:
        /^GET from https:\/\/evil\.example: 200 with 5,000 B \(the allowed https:\/\/app\.example got 1,000 B\) and no Access-Control-Allow-Origin for it: only the browser hides the response$/,
      data: { origins: 1, bodyBytes: 5000 },
    },
  },
  {
    name: "a refused origin served, and the server's log shows the request ran",
    rule: refusedOriginStillServed,
    input: details(
      { evil: { get: { status: 200, bodyBytes: 5000, ranOnServer: true } } },
      { serverLog: { path: '/log', status: 200 } },
    ),
    expected: {
      code: 'CORS_REFUSED_ORIGIN_STILL_SERVED',
      evidence: /and no Access-Control-Allow-Origin for it; the server's log \(\/log\) shows it ran: only the browser/,
      data: { origins: 1, bodyBytes: 5000, ranOnServer: true },
    },
  },
  {
    name: 'a refused origin gets a 200 without a body',
    rule: refusedOriginStillServed,
    input: details({ evil: { get: { status: 200, bodyBytes: 0 } } }),
  },
];

testRules('CORS_RULES', CORS_RULES, cases, where);

test('a well-behaved server: no rule fires', () => {
  assert.deepEqual(applyRules(CORS_RULES, details(), where), []);
});
