// Prometheus and the Pushgateway of our own (Debian packages prometheus and
// prometheus-pushgateway), each on a free loopback port with its own temporary files and stopped
// by its own pid: `probefleet demo` starts them for its fleet, and so do the metrics tests
// (test/helpers/prometheus.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { freeLoopbackPort } from './redis-server.js';

export const PROMETHEUS_BINARIES = {
  prometheus: 'prometheus',
  pushgateway: 'prometheus-pushgateway',
  promtool: 'promtool',
} as const;

export interface ServiceOptions {
  /** Put before the command, e.g. a wrapper that ties the process to this one (regions/system.ts). */
  launcher?: string[];
  /** Where its temporary folder goes (removed by stop()); the system's temp folder by default. */
  parentDir?: string;
  /** The port to listen on; a free one by default. */
  port?: number;
}

interface Service {
  url: string;
  port: number;
  pid: number;
  /** SIGTERM, waits for the exit, removes its folder. */
  stop(): Promise<void>;
}

async function startService(
  command: string,
  args: (port: number, dir: string) => string[],
  readyPath: string,
  dirPrefix: string,
  options: ServiceOptions,
  prepare?: (dir: string) => Promise<void>,
): Promise<Service> {
  const dir = await mkdtemp(path.join(options.parentDir ?? tmpdir(), dirPrefix));
  await prepare?.(dir);
  const port = options.port ?? (await freeLoopbackPort());
  const [executable, ...launcherArgs] = [...(options.launcher ?? []), command];
  const child: ChildProcess = spawn(executable, [...launcherArgs, ...args(port, dir)], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  const exited = new Promise((resolve) => child.once('close', resolve));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 200; i++) {
    if (spawnError) {
      await stop();
      throw new Error(`cannot start ${command}: ${spawnError.message}`);
    }
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`${command} exited with ${child.exitCode}:\n${output}`);
    }
    const ready = await fetch(url + readyPath, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { url, port, pid: child.pid!, stop };
    await sleep(100);
  }
  await stop();
  throw new Error(`${command} did not become ready on port ${port} within 20 s:\n${output}`);
}

export interface Pushgateway extends Service {
  /** Every group the gateway holds: its labels and the names of its metric families. */
  groups(): Promise<{ labels: Record<string, string>; families: string[] }[]>;
}

/** A Pushgateway in memory only (Debian's default persists to /var/lib/prometheus). */
export async function startPushgateway(options: ServiceOptions = {}): Promise<Pushgateway> {
  const service = await startService(
    PROMETHEUS_BINARIES.pushgateway,
    (port) => [`--web.listen-address=127.0.0.1:${port}`, '--persistence.file=', '--log.level=warn'],
    '/-/ready',
    'probefleet-pushgateway-',
    options,
  );
  return {
    ...service,
    async groups() {
      const answer = (await (await fetch(`${service.url}/api/v1/metrics`)).json()) as {
        data: Record<string, unknown>[];
      };
      return answer.data.map((g) => ({
        labels: g.labels as Record<string, string>,
        families: Object.keys(g).filter(
          (k) => k !== 'labels' && k !== 'last_push_successful' && !k.startsWith('push_'),
        ),
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

/** Prometheus with the given configuration (an object, written as YAML) and files beside it
 * (rules), with its own storage. */
export async function startPrometheus(
  config: object,
  files: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<Prometheus> {
  const service = await startService(
    PROMETHEUS_BINARIES.prometheus,
    (port, dir) => [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    '/-/ready',
    'probefleet-prometheus-',
    options,
    async (dir) => {
      await writeFile(path.join(dir, 'prometheus.yml'), stringify(config));
      for (const [name, content] of Object.entries(files)) await writeFile(path.join(dir, name), content);
    },
  );
  const api = async <T>(pathAndQuery: string): Promise<T> => {
    const answer = (await (
      await fetch(service.url + pathAndQuery, { signal: AbortSignal.timeout(10_000) })
    ).json()) as { status: string; data: T; error?: string };
    if (answer.status !== 'success') throw new Error(`${pathAndQuery}: ${answer.error}`);
    return answer.data;
  };
  const query = async (expr: string) => {
    const data = await api<{ resultType: string; result: PromSample[] | [number, string] }>(
      `/api/v1/query?query=${encodeURIComponent(expr)}`,
    );
    // A scalar (time(), a number) comes back as one value without labels.
    return data.resultType === 'scalar'
      ? [{ metric: {}, value: data.result as [number, string] }]
      : (data.result as PromSample[]);
  };
  return {
    ...service,
    query,
    series: (match) => api(`/api/v1/series?match[]=${encodeURIComponent(match)}&start=${Date.now() / 1000 - 3600}`),
    alerts: async () =>
      (await api<{ alerts: { labels: Record<string, string>; state: string }[] }>('/api/v1/alerts')).alerts,
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
