// Pushes registries to a Prometheus Pushgateway. Every push is a PUT of a whole group (the
// gateway then holds exactly what was pushed) in the text format, each request bounded in time
// and retried with backoff within a bound. A push that fails after its retries is logged and
// counted (probefleet_push_failures_total), never fails the job or run that made the numbers,
// and is kept: the group's last state is pushed again after the gateway's next answer (another
// push succeeding, or a retry every minute), so an outage at the end of a run does not lose it.
//
// The `probes` group is cumulative: before its first push a process reads what the gateway holds
// for its group and continues from there, so a restarted worker, or `run` in embedded mode once
// a night, adds to the counters instead of starting them again (which Prometheus would take
// for a reset and lose the night's increase).
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { AggregatorRegistry, Registry, type Counter } from 'prom-client';
import { PUSH_GROUPS, PUSH_METRICS, type PushGroupKind } from '../contracts/metric-names.js';
import type { Logger } from '../common/log.js';
import { metricOf } from './prom.js';

/** @defaultValue each request 5 s; retried for 30 s, 0.5 s apart at first, doubling to 8 s; kept pushes retried every 60 s; a cumulative group at most every 5 s */
export interface PushgatewaySettings {
  /** Base URL, e.g. http://pushgateway:9091; `user:password@` in it is sent as basic auth. */
  url: string;
  /** Bound on each request to the gateway. */
  timeoutMs?: number;
  /** How long a push is retried before it counts as failed (no new attempt starts after it). */
  retryForMs?: number;
  /** At most this many attempts per push, the first included (within retryForMs). */
  attempts?: number;
  /** Wait before the second attempt; doubled for each further one, up to 8 s. */
  backoffMs?: number;
  /** How often a push that failed is tried again in the background, until the gateway answers. */
  repushEveryMs?: number;
  /** A cumulative group (the probes' results) is pushed at most this often, and at once on `flush`. */
  pushIntervalMs?: number;
}

const MAX_BACKOFF_MS = 8_000;

export class PushgatewayUrlError extends Error {
  override name = 'PushgatewayUrlError';
}

/** The URL without its password, for logs and messages. */
export function redactPushgatewayUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}

/** Checks a Pushgateway URL; throws PushgatewayUrlError naming what is wrong. */
export function parsePushgatewayUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new PushgatewayUrlError(
      `not a valid Pushgateway URL: "${redactPushgatewayUrl(url)}" (expected http[s]://[user:password@]host:port[/path])`,
    );
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new PushgatewayUrlError(`unsupported Pushgateway URL scheme "${parsed.protocol}" (use http:// or https://)`);
  }
  return parsed;
}

export type GroupingKey = Record<string, string>;

/** `/metrics/job/<job>/<label>/<value>...`; values that are not plain names go base64url-encoded. */
export function groupPath(job: string, key: GroupingKey): string {
  const segment = (name: string, value: string) =>
    /^[A-Za-z0-9._-]+$/.test(value)
      ? `/${name}/${value}`
      : `/${name}@base64/${Buffer.from(value).toString('base64url') || '='}`;
  return `/metrics${segment('job', job)}${Object.entries(key)
    .map(([name, value]) => segment(name, value))
    .join('')}`;
}

interface GatewayFamily {
  type: string;
  help: string;
  metrics: {
    labels: Record<string, string>;
    value?: string;
    buckets?: Record<string, string>;
    sum?: string;
    count?: string;
  }[];
}

/** A repeated push of one growing registry; pushes asked for while one is running, or within the
 * push interval after it started, are merged into one. */
export interface CumulativeGroup {
  /** Pushes soon, in the background. */
  schedule(): void;
  /** Pushes what waits for the interval at once; resolves when nothing is left to push (pushed,
   * or failed and counted). */
  flush(): Promise<void>;
}

export class MetricsPusher {
  private readonly base: URL;
  private readonly auth: string | undefined;
  private readonly timeoutMs: number;
  private readonly retryForMs: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly repushEveryMs: number;
  private readonly pushIntervalMs: number;
  private readonly failures: Counter<string>;
  /** Groups whose last push failed, by path: how to push their last state again. */
  private readonly failed = new Map<string, { kind: PushGroupKind; key: GroupingKey; push: () => Promise<void> }>();
  private repushTimer: NodeJS.Timeout | undefined;
  private repushing: Promise<void> | undefined;
  private closed = false;

  /** `registry`: where probefleet_push_failures_total is counted (the process's own /metrics). */
  constructor(
    settings: PushgatewaySettings,
    private readonly log: Logger,
    registry: Registry,
  ) {
    this.base = parsePushgatewayUrl(settings.url);
    this.auth = this.base.username
      ? `${decodeURIComponent(this.base.username)}:${decodeURIComponent(this.base.password)}`
      : undefined;
    this.base.username = '';
    this.base.password = '';
    this.timeoutMs = settings.timeoutMs ?? 5_000;
    this.retryForMs = settings.retryForMs ?? 30_000;
    this.attempts = Math.max(1, settings.attempts ?? Number.POSITIVE_INFINITY);
    this.backoffMs = settings.backoffMs ?? 500;
    this.repushEveryMs = settings.repushEveryMs ?? 60_000;
    this.pushIntervalMs = settings.pushIntervalMs ?? 5_000;
    this.failures = metricOf(PUSH_METRICS.failures, registry);
    for (const group of Object.keys(PUSH_GROUPS)) this.failures.inc({ group }, 0);
  }

  /** The gateway's URL, password left out. */
  get url(): string {
    return this.base.href.replace(/\/$/, '');
  }

  /** Replaces the group with the registry's metrics. False (logged, counted and kept to push
   * again) when it failed. */
  async replace(kind: PushGroupKind, key: GroupingKey, registry: Registry): Promise<boolean> {
    const body = await registry.metrics();
    return this.attempt(
      kind,
      key,
      async () => void (await this.request('PUT', groupPath(PUSH_GROUPS[kind].job, key), body, registry.contentType)),
    );
  }

  /** Groups whose last push failed and that are still to be pushed again. */
  get pendingGroups(): number {
    return this.failed.size;
  }

  /** Stops retrying in the background (what still failed stays unpushed), and waits for a push
   * again of what failed if one is under way. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.repushTimer);
    this.repushTimer = undefined;
    await this.repushing;
  }

  /**
   * For a process that serves no /metrics (`probefleet run`): its own push failures, pushed as the
   * cumulative group `cli` {instance}, continuing the gateway's counts, so that they are counted
   * somewhere. `once`: one attempt, for when the gateway has just failed and waiting again would
   * only delay the end of the command.
   */
  async pushFailureCounts(instance: string, options: { once?: boolean } = {}): Promise<boolean> {
    const registry = new Registry();
    const counts = metricOf(PUSH_METRICS.failures, registry);
    for (const { labels, value } of (await this.failures.get()).values) counts.inc(labels, value);
    const key = { instance };
    return this.attempt(
      'cli',
      key,
      async () => {
        const seed = await this.readGroup(PUSH_GROUPS.cli.job, key, registry);
        const merged = AggregatorRegistry.aggregate([await registry.getMetricsAsJSON(), seed]);
        await this.request('PUT', groupPath(PUSH_GROUPS.cli.job, key), await merged.metrics(), registry.contentType);
      },
      options.once ? 1 : this.attempts,
    );
  }

  /** A group that `registry` keeps adding to; see the file comment for how it continues the gateway's counts. */
  cumulative(kind: PushGroupKind, key: GroupingKey, registry: Registry): CumulativeGroup {
    let seed: unknown[] | undefined;
    let pending = false;
    let running: Promise<void> | undefined;
    let lastPushAt = Number.NEGATIVE_INFINITY;
    /** Ends the wait for the interval (a flush), if one is under way. */
    let endWait: (() => void) | undefined;
    let flushing = false;
    const pushOnce = () =>
      this.attempt(kind, key, async () => {
        seed ??= await this.readGroup(PUSH_GROUPS[kind].job, key, registry);
        const merged = AggregatorRegistry.aggregate([await registry.getMetricsAsJSON(), seed]);
        await this.request('PUT', groupPath(PUSH_GROUPS[kind].job, key), await merged.metrics(), registry.contentType);
      });
    const schedule = (): void => {
      pending = true;
      running ??= (async () => {
        while (pending) {
          // What jobs add within the interval goes in one push: a push (the whole registry, merged
          // and sent) after each of hundreds of jobs a second would be most of a worker's work.
          const wait = lastPushAt + this.pushIntervalMs - performance.now();
          if (wait > 0 && !flushing) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, wait);
              endWait = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            endWait = undefined;
          }
          pending = false;
          lastPushAt = performance.now();
          await pushOnce();
        }
      })().finally(() => {
        running = undefined;
        if (pending) schedule();
      });
    };
    return {
      schedule,
      flush: async () => {
        flushing = true;
        endWait?.();
        try {
          await running;
        } finally {
          flushing = false;
        }
      },
    };
  }

  private async attempt(
    kind: PushGroupKind,
    key: GroupingKey,
    push: () => Promise<void>,
    attempts = this.attempts,
  ): Promise<boolean> {
    const path = groupPath(PUSH_GROUPS[kind].job, key);
    const giveUpAt = Date.now() + this.retryForMs;
    let lastError: Error | undefined;
    let attempt = 0;
    for (;;) {
      attempt++;
      try {
        await push();
        this.log.debug({ pushgateway: this.url, group: kind, key, attempt }, 'metrics pushed');
        this.failed.delete(path); // this state is newer than the one that failed
        this.repushFailed();
        return true;
      } catch (err) {
        lastError = err as Error;
      }
      const wait = Math.min(this.backoffMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
      if (attempt >= attempts || Date.now() + wait >= giveUpAt) break;
      await sleep(wait);
    }
    this.failures.inc({ group: kind });
    this.failed.set(path, { kind, key, push });
    this.repushLater();
    this.log.warn(
      { pushgateway: this.url, group: kind, key, attempts: attempt, err: lastError?.message },
      'cannot push metrics to the Pushgateway: going on without; pushed again when the gateway answers',
    );
    return false;
  }

  /** Pushes the failed groups' last states again, each once (still failing: kept, not counted again). */
  private repushFailed(): Promise<void> {
    if (this.failed.size === 0) return Promise.resolve();
    this.repushing ??= (async () => {
      for (const [path, { kind, key, push }] of [...this.failed]) {
        try {
          await push();
          if (this.failed.get(path)?.push === push) this.failed.delete(path);
          this.log.info({ pushgateway: this.url, group: kind, key }, 'metrics that failed to push earlier are pushed');
        } catch (err) {
          this.log.debug({ group: kind, key, err: (err as Error).message }, 'metrics still cannot be pushed');
        }
      }
    })().finally(() => {
      this.repushing = undefined;
      this.repushLater();
    });
    return this.repushing;
  }

  /** While something failed, tries again every repushEveryMs (the timer never holds a process open). */
  private repushLater(): void {
    if (this.failed.size === 0 || this.repushTimer || this.closed) return;
    this.repushTimer = setTimeout(() => {
      this.repushTimer = undefined;
      void this.repushFailed();
    }, this.repushEveryMs);
    this.repushTimer.unref();
  }

  /** What the gateway holds for the group, as prom-client metric objects of the families `registry` has. */
  private async readGroup(job: string, key: GroupingKey, registry: Registry): Promise<unknown[]> {
    const answer = JSON.parse(await this.request('GET', '/api/v1/metrics')) as { data?: Record<string, unknown>[] };
    const wanted: GroupingKey = { job, ...key };
    const group = answer.data?.find((g) => {
      const labels = (g.labels ?? {}) as Record<string, string>;
      return (
        Object.keys(labels).length === Object.keys(wanted).length &&
        Object.entries(wanted).every(([k, v]) => labels[k] === v)
      );
    });
    if (!group) return [];
    const seed: unknown[] = [];
    for (const [name, value] of Object.entries(group)) {
      const ours = registry.getSingleMetric(name) as { type?: string } | undefined;
      const family = value as GatewayFamily;
      if (!ours || typeof family !== 'object' || !Array.isArray(family.metrics)) continue;
      const type = family.type.toLowerCase();
      // A family renamed or retyped since the last push starts afresh rather than mixing kinds.
      if (type !== ours.type) continue;
      const values = family.metrics.flatMap(
        ({
          labels,
          value: v,
          buckets,
          sum,
          count,
        }): { metricName?: string; labels: Record<string, string | number>; value: number }[] => {
          const own = Object.fromEntries(Object.entries(labels).filter(([k]) => !(k in wanted)));
          if (type !== 'histogram') return [{ labels: own, value: Number(v) }];
          return [
            ...Object.entries(buckets ?? {}).map(([le, n]) => ({
              metricName: `${name}_bucket`,
              labels: { ...own, le: le === '+Inf' ? '+Inf' : Number(le) },
              value: Number(n),
            })),
            { metricName: `${name}_sum`, labels: own, value: Number(sum) },
            { metricName: `${name}_count`, labels: own, value: Number(count) },
          ];
        },
      );
      seed.push({ name, help: family.help, type, aggregator: type === 'gauge' ? 'max' : 'sum', values });
    }
    return seed;
  }

  private request(method: 'GET' | 'PUT', path: string, body?: string, contentType?: string): Promise<string> {
    const url = new URL(this.base.pathname.replace(/\/$/, '') + path, this.base);
    const client = url.protocol === 'https:' ? https : http;
    // The whole exchange is bounded, not only the wait between two packets.
    const signal = AbortSignal.timeout(this.timeoutMs);
    return new Promise((resolve, reject) => {
      const req = client.request(
        url,
        {
          method,
          auth: this.auth,
          signal,
          headers:
            body === undefined
              ? {}
              : {
                  'content-type': contentType ?? 'text/plain; version=0.0.4',
                  'content-length': Buffer.byteLength(body),
                },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            if ((res.statusCode ?? 0) >= 400)
              reject(new Error(`${method} ${url.pathname} answered ${res.statusCode}: ${text.trim().slice(0, 200)}`));
            else resolve(text);
          });
          res.on('error', reject);
        },
      );
      req.on('error', (err) => reject(signal.aborted ? new Error(`no answer within ${this.timeoutMs} ms`) : err));
      req.end(body);
    });
  }
}
