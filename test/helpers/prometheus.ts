// Prometheus, the Pushgateway and promtool for tests (Debian packages prometheus and
// prometheus-pushgateway, installed by test/services/ensure.sh): each started on a free loopback
// port with its own temporary files, stopped by its own pid. Outside CI a missing binary skips
// the tests that need it, with what to run; under CI=true they fail loudly.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { freePort } from './redis.js';

export const PROMETHEUS_BINARIES = { prometheus: 'prometheus', pushgateway: 'prometheus-pushgateway', promtool: 'promtool' } as const;

export function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why Prometheus-backed tests cannot run, or false. */
export const prometheusMissing: string | false = (() => {
  const missing = Object.values(PROMETHEUS_BINARIES).filter((b) => !onPath(b));
  return missing.length === 0
    ? false
    : `${missing.join(', ')} not found: run \`bash test/services/ensure.sh\` as root (installs Debian's prometheus and prometheus-pushgateway)`;
})();

/** Test options: skip outside CI when a binary is missing (under CI the test runs and fails). */
export const needsPrometheus = { skip: process.env.CI === 'true' ? false : prometheusMissing };

export function requirePrometheus(): void {
  if (prometheusMissing) assert.fail(prometheusMissing);
}

interface Service {
  url: string;
  port: number;
  stop(): Promise<void>;
}

async function startService(command: string, args: (port: number) => string[], readyPath: string, dir: string): Promise<Service & { child: ChildProcess; output(): string }> {
  const port = await freePort();
  const child = spawn(command, args(port), { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 150; i++) {
    if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode}:\n${output}`);
    const ready = await fetch(url + readyPath).then((r) => r.ok, () => false);
    if (ready) return { url, port, child, output: () => output, stop };
    await sleep(100);
  }
  await stop();
  throw new Error(`${command} did not become ready on port ${port}:\n${output}`);
}

export interface Pushgateway extends Service {
  /** Every group the gateway holds: its labels and the names of its metric families. */
  groups(): Promise<{ labels: Record<string, string>; families: string[] }[]>;
}

/** A Pushgateway in memory only (Debian's default persists to /var/lib/prometheus: not in tests). */
export async function startPushgateway(): Promise<Pushgateway> {
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-pushgateway-'));
  const service = await startService(PROMETHEUS_BINARIES.pushgateway, (port) => [`--web.listen-address=127.0.0.1:${port}`, '--persistence.file=', '--log.level=warn'], '/-/ready', dir);
  return {
    url: service.url,
    port: service.port,
    stop: service.stop,
    async groups() {
      const answer = (await (await fetch(`${service.url}/api/v1/metrics`)).json()) as { data: Record<string, unknown>[] };
      return answer.data.map((g) => ({
        labels: g.labels as Record<string, string>,
        families: Object.keys(g).filter((k) => k !== 'labels' && k !== 'last_push_successful' && !k.startsWith('push_')),
      }));
    },
  };
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Prometheus extends Service {
  /** An instant query; throws on a PromQL error. */
  query(expr: string): Promise<PromSample[]>;
  /** The series of a metric (its label sets) in the last hour. */
  series(match: string): Promise<Record<string, string>[]>;
  alerts(): Promise<{ labels: Record<string, string>; state: string }[]>;
  /** Resolves when the query's first value satisfies `check`; rejects after `timeoutMs`. */
  waitFor(expr: string, check: (value: number) => boolean, timeoutMs?: number): Promise<void>;
}

/** Prometheus with the given configuration (an object, written as YAML), its own storage, on a free port. */
export async function startPrometheus(config: object, files: Record<string, string> = {}): Promise<Prometheus> {
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-prometheus-'));
  await writeFile(path.join(dir, 'prometheus.yml'), stringify(config));
  for (const [name, content] of Object.entries(files)) await writeFile(path.join(dir, name), content);
  const service = await startService(
    PROMETHEUS_BINARIES.prometheus,
    (port) => [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    '/-/ready',
    dir,
  );
  const api = async <T>(pathAndQuery: string): Promise<T> => {
    const answer = (await (await fetch(service.url + pathAndQuery)).json()) as { status: string; data: T; error?: string };
    if (answer.status !== 'success') throw new Error(`${pathAndQuery}: ${answer.error}`);
    return answer.data;
  };
  const query = async (expr: string) => {
    const data = await api<{ resultType: string; result: PromSample[] | [number, string] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`);
    // A scalar (time(), a number) comes back as one value without labels.
    return data.resultType === 'scalar' ? [{ metric: {}, value: data.result as [number, string] }] : (data.result as PromSample[]);
  };
  return {
    url: service.url,
    port: service.port,
    stop: service.stop,
    query,
    series: (match) => api(`/api/v1/series?match[]=${encodeURIComponent(match)}&start=${Date.now() / 1000 - 3600}`),
    alerts: async () => (await api<{ alerts: { labels: Record<string, string>; state: string }[] }>('/api/v1/alerts')).alerts,
    async waitFor(expr, check, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      let last = 'no result';
      while (Date.now() < until) {
        const result = await query(expr);
        if (result.length > 0 && check(Number(result[0].value[1]))) return;
        last = result.length > 0 ? result[0].value[1] : 'no result';
        await sleep(250);
      }
      throw new Error(`${expr}: still ${last} after ${timeoutMs} ms`);
    },
  };
}
