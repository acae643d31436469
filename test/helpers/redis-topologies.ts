// Redis shaped as managed offerings are, from processes of the test's own on free loopback ports,
// each in a temp folder: a primary with replicas watched by redis-sentinels, and a Redis Cluster
// of redis-servers made with redis-cli. Outside CI a missing program skips the tests that need
// it, with what to install; under CI=true they fail loudly.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { redisOptions } from '../../common/redis.js';
import { freeLoopbackPort, redisAnswers, startRedisServer, type RedisServer } from '../../common/redis-server.js';
import { onPath } from './prometheus.js';
import { startOwnRedis, type OwnRedis } from './redis.js';
import { tempDir } from './temp-dir.js';

/** Why the tests of `programs` cannot run, or false. */
function missing(programs: Record<string, string>): string | false {
  const absent = Object.keys(programs).filter((program) => !onPath(program));
  if (absent.length === 0) return false;
  const packages = [...new Set(absent.map((program) => programs[program]))].join(' ');
  return `${absent.join(', ')} not installed: run \`bash test/services/ensure.sh\` as root (apt-get install ${packages})`;
}

export const sentinelMissing = missing({ 'redis-server': 'redis-server', 'redis-sentinel': 'redis-sentinel' });
export const clusterMissing = missing({ 'redis-server': 'redis-server', 'redis-cli': 'redis-tools' });

/** Test options: skip outside CI when a program is missing (under CI the test runs and fails). */
export const needsSentinel = { skip: process.env.CI === 'true' ? false : sentinelMissing };
export const needsCluster = { skip: process.env.CI === 'true' ? false : clusterMissing };

export function requireSentinel(): void {
  if (sentinelMissing) assert.fail(sentinelMissing);
}
export function requireCluster(): void {
  if (clusterMissing) assert.fail(clusterMissing);
}

/** How long a topology may take to settle (replicas in sync, sentinels aware of each other, a
 * cluster's nodes agreeing), on a busy machine. */
const SETTLE_MS = 60_000;

/** Runs `ask` on a short-lived client of the server until `done` says yes; fails after `timeoutMs`. */
async function until<T>(
  what: string,
  ask: () => Promise<T>,
  done: (answer: T) => boolean,
  timeoutMs = SETTLE_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | string = 'no answer';
  while (Date.now() < deadline) {
    try {
      const answer = await ask();
      if (done(answer)) return answer;
      last = answer;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(200);
  }
  assert.fail(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}

/** How to reach a server of ours: its URL, and the CA of its certificate when it speaks TLS. */
interface Reachable {
  url: string;
  caPem?: string;
}

/** A command sent to the server with a client of its own. */
async function ask(server: Reachable, ...command: string[]): Promise<unknown> {
  const client = new Redis({
    ...redisOptions(server),
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2_000,
    commandTimeout: 5_000,
  });
  client.on('error', () => {});
  try {
    return await client.call(command[0]!, ...command.slice(1));
  } finally {
    client.disconnect();
  }
}

/** A flat [field, value, ...] reply as an object. */
function fields(reply: unknown): Record<string, string> {
  const list = reply as string[];
  return Object.fromEntries(list.flatMap((_, i) => (i % 2 === 0 ? [[list[i], list[i + 1]]] : [])));
}

const SENTINEL_NAME = 'pfprimary';

export interface OwnSentinels {
  /** The primary's name as the sentinels know it. */
  name: string;
  /** redis-sentinel://127.0.0.1:S1,.../NAME */
  url: string;
  /** The data servers; the first was the primary at start. */
  servers: OwnRedis[];
  sentinelPorts: number[];
  /** The server the sentinels name as the primary now. */
  primary(): Promise<OwnRedis>;
  /** Waits until the sentinels name another primary than `old`, and that server says it is one. */
  failedOver(old: OwnRedis): Promise<OwnRedis>;
  /** Waits until every server that answers is the primary or its replica in sync, as every sentinel
   * knows (a server started again after a failover is made a replica by the sentinels). */
  settled(): Promise<void>;
  /** SENTINEL FAILOVER: a planned switch to a replica, the primary demoted to a replica. */
  switchOver(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A primary, `replicas` replicas and `sentinels` redis-sentinels with a quorum of a majority,
 * declaring a primary down after 1 s without an answer; resolves once the replicas are in sync
 * and every sentinel knows them and the other sentinels (so a failover can start at once).
 */
export async function startOwnSentinels(options: { replicas: number; sentinels: number }): Promise<OwnSentinels> {
  const primary = await startOwnRedis({ persistence: 'none' });
  const replicas = await Promise.all(
    Array.from({ length: options.replicas }, () =>
      startOwnRedis({ persistence: 'none', args: () => ['--replicaof', '127.0.0.1', String(primary.port)] }),
    ),
  );
  const servers = [primary, ...replicas];
  const quorum = Math.floor(options.sentinels / 2) + 1;
  const sentinels: { port: number; url: string; server: RedisServer }[] = [];
  const settled = async () => {
    const live = (await Promise.all(servers.map(async (s) => ((await redisAnswers(s.url)) ? s : undefined)))).filter(
      (s) => s !== undefined,
    );
    for (const server of live)
      await until(
        `${server.port} a primary, or a replica in sync`,
        () => ask(server, 'INFO', 'replication'),
        (info) => /^role:master\s*$/m.test(String(info)) || /^master_link_status:up\s*$/m.test(String(info)),
      );
    for (const sentinel of sentinels)
      await until(
        `sentinel ${sentinel.port} knows the replicas up and the other sentinels`,
        async () => ({
          primary: fields(await ask(sentinel, 'SENTINEL', 'MASTER', SENTINEL_NAME)),
          replicas: ((await ask(sentinel, 'SENTINEL', 'REPLICAS', SENTINEL_NAME)) as unknown[]).map(fields),
        }),
        ({ primary, replicas }) =>
          Number(primary['num-other-sentinels']) === options.sentinels - 1 &&
          replicas.filter((r) => !r.flags?.includes('s_down') && r['master-link-status'] === 'ok').length ===
            live.length - 1,
      );
  };
  const stop = async () => {
    await Promise.all(sentinels.map((s) => s.server.stop()));
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    for (let i = 0; i < options.sentinels; i++) {
      const dir = tempDir('probefleet-sentinel-');
      const port = await freeLoopbackPort();
      const config = path.join(dir, 'sentinel.conf');
      await writeFile(
        config,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `logfile ${path.join(dir, 'sentinel.log')}`,
          `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${primary.port} ${quorum}`,
          `sentinel down-after-milliseconds ${SENTINEL_NAME} 1000`,
          `sentinel failover-timeout ${SENTINEL_NAME} 10000`,
          '',
        ].join('\n'),
      );
      const url = `redis://127.0.0.1:${port}`;
      sentinels.push({ port, url, server: await startRedisServer({ program: 'redis-sentinel', args: [config], url }) });
    }
    await settled();
  } catch (err) {
    await stop();
    throw err;
  }
  const primaryNow = async () => {
    const [, port] = (await ask(sentinels[0]!, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_NAME)) as string[];
    const server = servers.find((s) => s.port === Number(port));
    assert.ok(server, `the sentinels name a primary at port ${port}, none of ours`);
    return server;
  };
  return {
    name: SENTINEL_NAME,
    url: `redis-sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${SENTINEL_NAME}`,
    servers,
    sentinelPorts: sentinels.map((s) => s.port),
    primary: primaryNow,
    async failedOver(old) {
      const next = await until(`a failover away from ${old.port}`, primaryNow, (server) => server !== old);
      await until(
        `${next.port} acting as the primary`,
        () => ask(next, 'ROLE'),
        (role) => (role as string[])[0] === 'master',
      );
      return next;
    },
    settled,
    async switchOver() {
      assert.equal(await ask(sentinels[0]!, 'SENTINEL', 'FAILOVER', SENTINEL_NAME), 'OK');
    },
    stop,
  };
}

export interface ClusterShard {
  primary: OwnRedis;
  replicas: OwnRedis[];
}

export interface OwnCluster {
  nodes: OwnRedis[];
  /** redis-cluster:// (rediss-cluster:// with TLS) naming these nodes. */
  urlOf(nodes: OwnRedis[]): string;
  /** The primary that owns the slot of the key (of its hash tag), and its replicas, as a live node says. */
  shardOf(key: string): Promise<ClusterShard>;
  /** Waits until every live node sees the replica as a primary with slots (its primary died). */
  failedOver(replica: OwnRedis): Promise<void>;
  stop(): Promise<void>;
}

/** Certificates signed by one CA: a server's for 127.0.0.1, and a client's, which the nodes
 * present to each other (the cluster bus checks both ends). */
export interface ClusterTls {
  caPem: string;
  server: { certPem: string; keyPem: string };
  client: { certPem: string; keyPem: string };
}

/**
 * A Redis Cluster of `primaries` primaries with `replicasEach` replicas each (redis-cli --cluster
 * create), a node declared failing after 1 s without an answer; with `tls`, nodes speak only TLS,
 * to clients and to each other. Resolves once every node sees the cluster as ok with all its
 * nodes, and every replica is in sync.
 */
export async function startOwnCluster(options: {
  primaries: number;
  replicasEach: number;
  tls?: ClusterTls;
}): Promise<OwnCluster> {
  const count = options.primaries * (1 + options.replicasEach);
  const nodes: OwnRedis[] = [];
  const { tls } = options;
  const caPem = tls?.caPem;
  const at = (node: OwnRedis): Reachable => ({ url: node.url, ...(caPem ? { caPem } : {}) });
  /** TLS only: no plain port, certificates in the node's folder (written by `prepare`). */
  const tlsArgs = (port: number, dir: string) =>
    tls
      ? [
          ...['--port', '0', '--tls-port', String(port), '--tls-cluster', 'yes', '--tls-replication', 'yes'],
          ...['--tls-cert-file', path.join(dir, 'node.pem'), '--tls-key-file', path.join(dir, 'node.key')],
          ...[
            '--tls-client-cert-file',
            path.join(dir, 'client.pem'),
            '--tls-client-key-file',
            path.join(dir, 'client.key'),
          ],
          ...['--tls-ca-cert-file', path.join(dir, 'ca.pem'), '--tls-auth-clients', 'no'],
        ]
      : [];
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()));
  };
  try {
    for (let i = 0; i < count; i++) {
      // The bus port is chosen apart from the client port (not port + 10000, which may be taken).
      const busPort = await freeLoopbackPort();
      nodes.push(
        await startOwnRedis({
          ...(tls
            ? {
                url: (port) => `rediss://127.0.0.1:${port}`,
                caPem: tls.caPem,
                prepare: async (dir) => {
                  await writeFile(path.join(dir, 'node.pem'), tls.server.certPem);
                  await writeFile(path.join(dir, 'node.key'), tls.server.keyPem);
                  await writeFile(path.join(dir, 'client.pem'), tls.client.certPem);
                  await writeFile(path.join(dir, 'client.key'), tls.client.keyPem);
                  await writeFile(path.join(dir, 'ca.pem'), tls.caPem);
                },
              }
            : {}),
          args: (port, dir) => [
            ...tlsArgs(port, dir),
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            path.join(dir, 'nodes.conf'),
            '--cluster-node-timeout',
            '1000',
            '--cluster-port',
            String(busPort),
            '--appendfsync',
            'everysec',
          ],
        }),
      );
    }
    await promisify(execFile)(
      'redis-cli',
      [
        ...(tls ? ['--tls', '--cacert', path.join(nodes[0]!.dir, 'ca.pem')] : []),
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        String(options.replicasEach),
        '--cluster-yes',
      ],
      { timeout: SETTLE_MS },
    );
    for (const node of nodes)
      await until(
        `node ${node.port} sees the cluster ok`,
        () => ask(at(node), 'CLUSTER', 'INFO'),
        (info) =>
          /^cluster_state:ok\s*$/m.test(String(info)) &&
          new RegExp(`^cluster_known_nodes:${count}\\s*$`, 'm').test(String(info)),
      );
    for (const node of nodes)
      await until(
        `node ${node.port} a primary or a replica in sync`,
        () => ask(at(node), 'INFO', 'replication'),
        (info) => /^role:master\s*$/m.test(String(info)) || /^master_link_status:up\s*$/m.test(String(info)),
      );
  } catch (err) {
    await stop();
    throw err;
  }
  /** The command's answer from the first node that answers. */
  const askAny = async (...command: string[]) => {
    let lastError: unknown;
    for (const node of nodes) {
      try {
        return await ask(at(node), ...command);
      } catch (err) {
        lastError = err; // that node is down: ask the next
      }
    }
    throw lastError;
  };
  /** CLUSTER NODES as one node sees it: each node's port, roles, primary's id and slots. */
  const parseNodes = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((line) => {
        const [id, address, flags, primaryId, , , , , ...slots] = line.split(' ');
        return {
          id: id!,
          port: Number(/:(\d+)@/.exec(address!)?.[1]),
          flags: flags!.split(','),
          primaryId: primaryId!,
          slots: slots.map((range) => range.split('-').map(Number) as [number, number?]),
        };
      });
  const nodeAt = (port: number) => {
    const node = nodes.find((n) => n.port === port);
    assert.ok(node, `no node of ours at port ${port}`);
    return node;
  };
  const live = (flags: string[]) => !flags.includes('fail') && !flags.includes('fail?');
  return {
    nodes,
    urlOf: (some) => `${tls ? 'rediss' : 'redis'}-cluster://${some.map((node) => `127.0.0.1:${node.port}`).join(',')}`,
    async shardOf(key) {
      const slot = Number(await askAny('CLUSTER', 'KEYSLOT', key));
      const all = parseNodes(String(await askAny('CLUSTER', 'NODES')));
      const owner = all.find(
        (n) =>
          n.flags.includes('master') &&
          live(n.flags) &&
          n.slots.some(([from, to]) => slot >= from && slot <= (to ?? from)),
      );
      assert.ok(owner, `no live primary owns slot ${slot}`);
      return {
        primary: nodeAt(owner.port),
        replicas: all.filter((n) => n.primaryId === owner.id && live(n.flags)).map((n) => nodeAt(n.port)),
      };
    },
    async failedOver(replica) {
      // Every live node must see it: until then, one may still send the slots' clients to the dead one.
      const living = (
        await Promise.all(nodes.map(async (n) => ((await redisAnswers(n.url, caPem)) ? n : undefined)))
      ).filter((n) => n !== undefined);
      for (const node of living)
        await until(
          `${node.port} sees ${replica.port} as a primary with slots`,
          async () => parseNodes(String(await ask(at(node), 'CLUSTER', 'NODES'))),
          (view) => view.some((n) => n.port === replica.port && n.flags.includes('master') && n.slots.length > 0),
        );
      await until(
        `${replica.port} sees the cluster ok`,
        () => ask(at(replica), 'CLUSTER', 'INFO'),
        (info) => /^cluster_state:ok\s*$/m.test(String(info)),
      );
    },
    stop,
  };
}
