// What a Redis error means for a fleet, in one place: a full Redis (maxmemory reached under a
// policy that evicts nothing, so every write is refused with OOM), a replica answering writes
// (READONLY, as after a failover the client has not followed), a connection lost; and how a process
// waits before trying again what Redis refused (Backoff). Matched on Redis's error codes (the first
// word of its reply), never on the rest of the text. Light (ioredis only as types): the CLI's
// top level tells these errors apart for every command.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { REDIS_ERROR_KINDS } from '../contracts/metric-names.js';

export type RedisErrorKind = (typeof REDIS_ERROR_KINDS)[number];

/** Redis did not answer: the command could not do its work. The CLI exits 4 on it (cli/exit-codes.ts). */
export class RedisUnreachableError extends Error {
  override name = 'RedisUnreachableError';
  readonly code = 'REDIS_UNREACHABLE';
}

/** Redis refused a write because it is full. The CLI exits 4 on it, as for an unreachable Redis. */
export class RedisFullError extends Error {
  override name = 'RedisFullError';
  readonly code = 'REDIS_FULL';
}

/** Errors ioredis gives when a connection went while a command was on it, or before it was sent;
 * and when the node or primary that holds a key cannot be reached during a failover (a Cluster's
 * slot map still naming a dead primary, the sentinels naming none yet). */
const CONNECTION_ERRORS =
  /^(Connection is closed|Command aborted due to connection close|Command timed out|Stream isn't writeable|Too many Cluster redirections|All sentinels are unreachable)|\b(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENOTCONN)\b/;
/** Redis's own codes for a Cluster whose slot has no primary answering yet. */
const FAILOVER_CODES = ['CLUSTERDOWN', 'TRYAGAIN'];

/** The Redis error codes of an error: its own, and for a transaction (EXECABORT) those of the
 * commands that made Redis discard it (ioredis keeps them as `previousErrors`). */
function codesOf(err: unknown): string[] {
  const message = (err as Error | undefined)?.message ?? String(err);
  const previous = (err as { previousErrors?: unknown[] } | undefined)?.previousErrors ?? [];
  return [message.split(' ', 1)[0] ?? '', ...previous.flatMap(codesOf)];
}

export function redisErrorKind(err: unknown): RedisErrorKind {
  if (err instanceof RedisFullError) return 'oom';
  const codes = codesOf(err);
  if (codes.includes('OOM')) return 'oom';
  if (codes.includes('READONLY')) return 'readonly';
  if (CONNECTION_ERRORS.test((err as Error | undefined)?.message ?? '')) return 'connection';
  if (codes.some((code) => FAILOVER_CODES.includes(code))) return 'connection';
  return 'other';
}

/** Redis refused the write because it is full. */
export const isRedisFull = (err: unknown): boolean => redisErrorKind(err) === 'oom';

/** How Redis stands with its memory (INFO memory: readable where CONFIG is refused, and while full). */
export interface RedisMemory {
  usedBytes: number;
  /** 0: no limit. */
  maxBytes: number;
  policy: string;
}

export async function redisMemory(client: Pick<Redis, 'info'>): Promise<RedisMemory> {
  const info = await client.info('memory');
  const field = (name: string) => info.match(new RegExp(`^${name}:(.*?)\\s*$`, 'm'))?.[1] ?? '';
  return {
    usedBytes: Number(field('used_memory')),
    maxBytes: Number(field('maxmemory')),
    policy: field('maxmemory_policy') || 'unknown',
  };
}

/** Whether Redis refuses writes now: at its limit under a policy that evicts nothing. */
export const isFull = (memory: RedisMemory): boolean =>
  memory.maxBytes > 0 && memory.usedBytes >= memory.maxBytes && memory.policy === 'noeviction';

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1_048_576) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1_048_576).toFixed(1)} MiB`;
}

/** "Redis is full (maxmemory 4.0 MiB, policy noeviction, 4.2 MiB used)", or as much as is known. */
export function describeFull(memory: RedisMemory | undefined): string {
  if (!memory) return 'Redis is full (maxmemory reached; INFO memory could not be read)';
  return `Redis is full (maxmemory ${bytes(memory.maxBytes)}, policy ${memory.policy}, ${bytes(memory.usedBytes)} used)`;
}

const FREE_IT = 'free memory in Redis or raise its maxmemory (docs/distributed.md, "When Redis is full")';

/**
 * The error to throw when Redis refused `what` as full: `<describeFull>: <what>: <advice>`.
 * Reads INFO memory for the numbers (allowed while Redis is full); without an answer it says so.
 */
export async function redisFullError(client: Pick<Redis, 'info'>, what: string): Promise<RedisFullError> {
  const memory = await redisMemory(client).catch(() => undefined);
  return new RedisFullError(`${describeFull(memory)}: ${what}; ${FREE_IT}`);
}

/** Exponential waits between tries of something Redis refuses: `firstMs`, doubled each failure up to
 * `maxMs`, back to none once it succeeds. */
export class Backoff {
  private nextMs = 0;

  constructor(
    private readonly firstMs = 1_000,
    private readonly maxMs = 30_000,
  ) {}

  /** How long the next try waits (0 when the last one succeeded). */
  get waitMs(): number {
    return this.nextMs;
  }

  failed(): number {
    this.nextMs = this.nextMs === 0 ? this.firstMs : Math.min(this.maxMs, this.nextMs * 2);
    return this.nextMs;
  }

  succeeded(): void {
    this.nextMs = 0;
  }

  /** Waits `waitMs`, or until the signal aborts; the wait alone never keeps the process alive. */
  async wait(signal?: AbortSignal): Promise<void> {
    if (this.nextMs > 0) await sleep(this.nextMs, undefined, { signal, ref: false }).catch(() => {});
  }
}
