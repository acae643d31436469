// A primary and a replica of the test's own, with socat in front of them: clients connect to the
// front proxy, the replica replicates through a relay the test can hold (SIGSTOP), and a failover
// is the primary killed with SIGKILL, the replica promoted (REPLICAOF NO ONE) and, after a gap, the
// front proxy pointing at it. Writes the primary acknowledged while the relay was held are lost,
// as in a real failover to a replica that lagged. Every socat runs in a process group of its own,
// stopped by its id.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { redisOptions } from '../../common/redis.js';
import { freePort, startOwnRedis, type OwnRedis } from './redis.js';

export interface ReplicatedRedis {
  /** Where clients connect: the front proxy. */
  url: string;
  primary: OwnRedis;
  replica: OwnRedis;
  /** A client of the replica's own (not through the proxy). */
  replicaClient: Redis;
  /** Holds the replication stream: the primary's writes stop reaching the replica. */
  holdReplication(): void;
  releaseReplication(): void;
  /** kill -9 the primary, promote the replica, and after `gapMs` point the front proxy at it. */
  failover(gapMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** socat forwarding a loopback port to another, resolved once it accepts connections. */
export async function forward(listenPort: number, toPort: number): Promise<ChildProcess> {
  const child = spawn('socat', [`TCP-LISTEN:${listenPort},bind=127.0.0.1,reuseaddr,fork`, `TCP:127.0.0.1:${toPort}`], {
    detached: true,
    stdio: 'ignore',
  });
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`socat on ${listenPort} exited with ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(listenPort, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return child;
    await sleep(50);
  }
  throw new Error(`socat on ${listenPort} did not listen within 5 s`);
}

/** Signals socat and the children it forked for each connection (its process group). */
export function signalGroup(child: ChildProcess | undefined, signal: NodeJS.Signals): void {
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // gone already
  }
}

export async function startReplicatedRedis(): Promise<ReplicatedRedis> {
  // Diskless sync at once: the replica is in step within a second of starting.
  const primary = await startOwnRedis({ persistence: 'none', args: () => ['--repl-diskless-sync-delay', '0'] });
  const [relayPort, frontPort] = [await freePort(), await freePort()];
  let relay: ChildProcess | undefined = await forward(relayPort, primary.port);
  let front: ChildProcess | undefined = await forward(frontPort, primary.port);
  const replica = await startOwnRedis({
    persistence: 'none',
    args: () => ['--replicaof', '127.0.0.1', String(relayPort)],
  });
  const replicaClient = new Redis(redisOptions({ url: replica.url }));
  // In step from both ends (the replica's link up, the primary counting it online): a submit asks
  // the primary how many replicas to wait for. A busy machine can take many seconds to get there;
  // a rig that never does fails here, not as a run that waited for no replica.
  const primaryClient = new Redis(redisOptions({ url: primary.url }));
  try {
    const inStep = async () =>
      /^master_link_status:up/m.test(await replicaClient.info('replication')) &&
      /^slave0:.*state=online/m.test(await primaryClient.info('replication'));
    const until = Date.now() + 60_000;
    while (!(await inStep())) {
      if (Date.now() > until) throw new Error('the replica did not get in step with the primary within 60 s');
      await sleep(100);
    }
  } finally {
    primaryClient.disconnect();
  }
  return {
    url: `redis://127.0.0.1:${frontPort}`,
    primary,
    replica,
    replicaClient,
    holdReplication: () => signalGroup(relay, 'SIGSTOP'),
    releaseReplication: () => signalGroup(relay, 'SIGCONT'),
    async failover(gapMs) {
      await primary.kill();
      signalGroup(front, 'SIGKILL');
      await replicaClient.replicaof('NO', 'ONE');
      await sleep(gapMs);
      front = await forward(frontPort, replica.port);
    },
    async stop() {
      for (const child of [front, relay]) {
        signalGroup(child, 'SIGCONT');
        signalGroup(child, 'SIGKILL');
      }
      [front, relay] = [undefined, undefined];
      replicaClient.disconnect();
      await Promise.all([primary.stop(), replica.stop()]);
    },
  };
}
