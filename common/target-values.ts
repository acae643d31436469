// Values a target sends, parsed by functions that cannot throw and never give a number that
// cannot be stored: a header's percent-escapes, a delta-seconds, a port, a certificate's date.
// What cannot be read is null (the caller says what that means), never an exception that would
// end a probe, a report or a run.

/** RFC 9111 §1.2.2: a delta-seconds too large to represent is taken as 2^31. */
export const MAX_DELTA_SECONDS = 2 ** 31;

/** `text` with its %XX escapes decoded as UTF-8; null when an escape is malformed. */
export function percentDecoded(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** A delta-seconds (`ma=`, `max-age=`): digits only, at most MAX_DELTA_SECONDS; null when not digits. */
export function deltaSeconds(text: string): number | null {
  if (!/^\d+$/.test(text)) return null;
  return Math.min(Number(text), MAX_DELTA_SECONDS);
}

/** A TCP port, 1..65535, from its digits; null otherwise. */
export function portNumber(text: string): number | null {
  if (!/^\d{1,5}$/.test(text)) return null;
  const port = Number(text);
  return port >= 1 && port <= 65_535 ? port : null;
}

/** A date as a certificate or header gives it (`Dec 31 23:59:59 2030 GMT`), in ms since the epoch; null when it is no date. */
export function dateMs(text: string | undefined): number | null {
  if (text === undefined) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

/** The latest date an ISO timestamp of four-digit years holds (X.509's GeneralizedTime ends there too). */
const LAST_ISO_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** The ISO form of a date in ms (the result schema's form); null when it has none (before year 0, after 9999). */
export function isoDate(ms: number | null): string | null {
  if (ms === null || !Number.isFinite(ms) || ms > LAST_ISO_MS || ms < Date.parse('0000-01-01T00:00:00.000Z'))
    return null;
  return new Date(ms).toISOString();
}
