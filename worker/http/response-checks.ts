// A target's response checks (contracts/request.ts), compiled once per client: the status, the
// headers and the body a response must have to count as a good sample. A response that fails one
// is a sample with a RESPONSE_CHECK_FAILED error: left out of the timings, counted in the errors,
// and the job fails with it (worker/http/sequence.ts). Expressions are RE2 (re2js): linear in the
// body whatever the body is, so a hostile one cannot stall a worker by backtracking.
import { RE2JS } from 're2js';
import type { ProbeError } from '../../contracts/common.js';
import { CHECKED_BODY_BYTES, DEFAULT_CHECKS, checksReadBody, type ResponseChecks } from '../../contracts/request.js';
import { printable } from '../../common/printable.js';
import { thousands } from '../../common/plural.js';

/** Response headers as undici and node:http2 give them (names in lower case). */
export type CheckedHeaders = Record<string, string | string[] | number | undefined>;

/** How much of a server's value a message quotes. */
const QUOTED_CHARS = 80;

export class ResponseCheck {
  /** The body must be kept (up to CHECKED_BODY_BYTES) for this check. */
  readonly readsBody: boolean;
  /** The headers must be kept for this check. */
  readonly readsHeaders: boolean;
  private readonly codes: Set<number>;
  private readonly classes: Set<number>;
  private readonly statusText: string;
  private readonly bodyMatches: RE2JS | undefined;
  private readonly bodyNotMatches: RE2JS | undefined;
  private readonly headers: [name: string, expression: RE2JS][];

  constructor(checks: ResponseChecks = DEFAULT_CHECKS) {
    this.codes = new Set(checks.status.filter((s): s is number => typeof s === 'number'));
    this.classes = new Set(checks.status.filter((s): s is string => typeof s === 'string').map((s) => Number(s[0])));
    this.statusText = checks.status.join(', ');
    this.bodyMatches = checks.bodyMatches === undefined ? undefined : RE2JS.compile(checks.bodyMatches);
    this.bodyNotMatches = checks.bodyNotMatches === undefined ? undefined : RE2JS.compile(checks.bodyNotMatches);
    this.headers = Object.entries(checks.headers ?? {}).map(([name, expression]) => [
      name.toLowerCase(),
      RE2JS.compile(expression),
    ]);
    this.readsBody = checksReadBody(checks);
    this.readsHeaders = this.headers.length > 0;
  }

  /** The status alone passes (the check a response that is never read to its end can have). */
  statusPasses(status: number): boolean {
    return this.codes.has(status) || this.classes.has(Math.floor(status / 100));
  }

  /** Why the response fails the checks, or undefined when it passes. `body`: its first
   * CHECKED_BODY_BYTES, when `readsBody`; absent when the body was not read (then not checked). */
  failure(status: number, headers?: CheckedHeaders, body?: Buffer): ProbeError | undefined {
    if (!this.statusPasses(status)) return failed(`status ${status}, not ${this.statusText}`);
    if (headers) {
      for (const [name, expression] of this.headers) {
        // Own headers only: `constructor` is not a header an object inherits.
        const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
        if (value === undefined) return failed(`no ${name} header (the check wants /${expression.pattern()}/)`);
        const text = Array.isArray(value) ? value.join(', ') : String(value);
        if (!expression.matcher(text).find())
          return failed(`header ${name}: "${quoted(text)}" does not match /${expression.pattern()}/`);
      }
    }
    if (body && this.readsBody) {
      // latin1: one character per byte, so an expression sees every byte and no decoding can fail.
      const text = body.subarray(0, CHECKED_BODY_BYTES).toString('latin1');
      const of = body.length >= CHECKED_BODY_BYTES ? ` (its first ${thousands(CHECKED_BODY_BYTES)} bytes)` : '';
      if (this.bodyMatches && !this.bodyMatches.matcher(text).find())
        return failed(`the body${of} does not match /${this.bodyMatches.pattern()}/`);
      if (this.bodyNotMatches?.matcher(text).find())
        return failed(`the body${of} matches /${this.bodyNotMatches.pattern()}/, which it must not`);
    }
    return undefined;
  }
}

/** A body kept for a check: its chunks up to CHECKED_BODY_BYTES. */
export class CheckedBody {
  private readonly chunks: Buffer[] = [];
  private length = 0;

  add(chunk: Buffer): void {
    if (this.length >= CHECKED_BODY_BYTES) return;
    const kept = chunk.subarray(0, CHECKED_BODY_BYTES - this.length);
    this.chunks.push(kept);
    this.length += kept.length;
  }

  get bytes(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

function failed(message: string): ProbeError {
  return { code: 'RESPONSE_CHECK_FAILED', message: `response check failed: ${message}` };
}

const quoted = (text: string) => printable(text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}...` : text);
