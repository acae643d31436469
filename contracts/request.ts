// What a target's requests send beyond its URL and headers (method and body), and what their
// responses must be to count (checks, as blackbox_exporter's valid_status_codes and
// fail_if_body_*_regexp). Shared by the plan (as written), the job (as a worker gets it) and the
// worker (worker/http/response-checks.ts applies the checks).
import { RE2JS } from 're2js';
import { z } from 'zod';
import { PLAN_LIMITS } from './limits.js';

export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type Method = (typeof METHODS)[number];

/** Methods whose requests carry no body: a server may refuse one that does (RFC 9110, 9.3.1-2). */
export const METHODS_WITHOUT_BODY: readonly Method[] = ['GET', 'HEAD'];

/** Bytes in a request body (inline, or the file a plan names): every job carries it, and a run's jobs sit in Redis. */
export const REQUEST_BODY_BYTES = 64 * 1024;

/** Bytes of a response body a body check reads; past them the check sees the first this many
 * (blackbox_exporter's body_size_limit does the same). */
export const CHECKED_BODY_BYTES = 1024 * 1024;

/** A regular expression as RE2 takes it (linear time on any body: no backreferences, no lookaround). */
export const regexSchema = z
  .string()
  .min(1)
  .max(PLAN_LIMITS.stringChars)
  .superRefine((pattern, ctx) => {
    const problem = regexProblem(pattern);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export function regexProblem(pattern: string): string | undefined {
  try {
    RE2JS.compile(pattern);
    return undefined;
  } catch (err) {
    return `not a regular expression RE2 takes (linear-time: no backreferences or lookaround): ${(err as Error).message.replace(/^error parsing regexp: /, '')}`;
  }
}

/** "200", or a class: "2xx". */
const statusSchema = z.union([
  z.int().min(100).max(599),
  z.string().regex(/^[1-5]xx$/, 'a status code (200) or a class of them ("2xx")'),
]);

export const responseChecksSchema = z.strictObject({
  /** Status codes a response may have. @defaultValue ["2xx"] */
  status: z.array(statusSchema).min(1).max(64).default(['2xx']),
  /** The body (its first CHECKED_BODY_BYTES) must match this. */
  bodyMatches: regexSchema.optional(),
  /** The body must not match this (a login page, an error page served with 200). */
  bodyNotMatches: regexSchema.optional(),
  /** Headers the response must have, each matching its expression (names without case). */
  headers: z
    .record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'not a valid header name'), regexSchema)
    .optional(),
});
export type ResponseChecks = z.output<typeof responseChecksSchema>;

/** The checks every response meets when a target names none: a 2xx status. */
export const DEFAULT_CHECKS: ResponseChecks = { status: ['2xx'] };

/** The checks need the body read (and kept up to CHECKED_BODY_BYTES). */
export const checksReadBody = (checks: ResponseChecks) =>
  checks.bodyMatches !== undefined || checks.bodyNotMatches !== undefined;
