// Signed job data: whoever can write to Redis can otherwise aim workers anywhere. With a key both
// sides share (PROBEFLEET_JOB_KEY), the coordinator side adds an HMAC-SHA256 of the data's
// canonical JSON as a `signature` field, and the side that acts on the data checks it first.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const JOB_KEY_ENV = 'PROBEFLEET_JOB_KEY';
/** A shorter key is refused: HMAC is only as strong as a key nobody can guess. */
export const MIN_JOB_KEY_LENGTH = 32;
const SCHEME = 'hmac-sha256:';

export class JobKeyError extends Error {
  override name = 'JobKeyError';
}

/** The data is unsigned, or its signature does not match: never worth retrying. */
export class JobSignatureError extends Error {
  override name = 'JobSignatureError';
}

/** The shared key from the environment; undefined when unset or empty. */
export function jobKeyFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const key = env[JOB_KEY_ENV];
  if (!key) return undefined;
  if (key.length < MIN_JOB_KEY_LENGTH) {
    throw new JobKeyError(
      `${JOB_KEY_ENV} must be at least ${MIN_JOB_KEY_LENGTH} characters (e.g. \`openssl rand -hex 32\`); it has ${key.length}`,
    );
  }
  return key;
}

/** JSON with every object's keys in sorted order, so equal data always signs the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function signatureOf(data: unknown, key: string): string {
  return SCHEME + createHmac('sha256', key).update(canonicalJson(data)).digest('hex');
}

/** The data with its signature; without a key, the data as it is. */
export function signData<T extends object>(data: T, key: string | undefined): T | (T & { signature: string }) {
  return key ? { ...data, signature: signatureOf(data, key) } : data;
}

/**
 * The data without its `signature` field. With a key, the signature must be there and match,
 * else JobSignatureError says which. Without a key nothing is checked (a signature is ignored).
 */
export function openSignedData(data: unknown, key: string | undefined): unknown {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    if (key) throw new JobSignatureError('unsigned job: the data is not an object');
    return data;
  }
  const { signature, ...rest } = data as Record<string, unknown>;
  if (!key) return rest;
  if (typeof signature !== 'string')
    throw new JobSignatureError(`unsigned: ${JOB_KEY_ENV} is set here, and only jobs signed with it are accepted`);
  const expected = Buffer.from(signatureOf(rest, key));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new JobSignatureError(
      `bad signature: the job was altered after it was signed, or signed with another ${JOB_KEY_ENV}`,
    );
  }
  return rest;
}
