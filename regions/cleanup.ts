// Guaranteed cleanup of emulated regions. Everything a harness creates lives inside its own
// network namespaces (veths, addresses, routes, neighbour entries, sysctls, qdiscs, iptables and
// ip6tables rules, helper processes) plus one run directory, so removing an instance is: stop
// every process in its namespaces, delete the namespaces (the kernel drops what was in them),
// delete the directory. That runs
// - from close(), after a normal run or a failed setup;
// - from SIGINT/SIGTERM/SIGHUP handlers and the `exit` event (synchronously: nothing async runs there);
// - at the next start, for instances whose owner process is gone (SIGKILL, power loss).
// Names carry the owner's pid and a random tag, `pf-<pid>-<tag>-...`, so parallel runs never
// touch each other's namespaces.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '../common/log.js';
import { runSync, sleepSync } from './system.js';

export const NAMESPACE_PREFIX = 'pf-';
const INSTANCE_NAME = /^pf-(\d+)-([0-9a-f]{4})-/;
const RUN_DIR_NAME = /^probefleet-regions-(\d+)-([0-9a-f]{4})$/;

export interface InstanceResources {
  /** `<pid>-<tag>` */
  id: string;
  namespaces: string[];
  runDir: string;
  /** Called first: the owner learns that its processes are about to be stopped on purpose. */
  beforeRemove?: () => void;
}

export function runDirFor(id: string): string {
  return path.join(tmpdir(), `probefleet-regions-${id}`);
}

/** Namespace names as `ip netns list` prints them (first word of each line). */
export function listNamespaces(): string[] {
  return runSync('ip', ['netns', 'list'])
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0])
    .filter(Boolean);
}

function pidsIn(namespace: string): number[] {
  try {
    return runSync('ip', ['netns', 'pids', namespace]).split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** True while a process exists and has not exited: a zombie (not yet reaped) holds nothing. */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function stopAll(pids: number[], signal: NodeJS.Signals, waitMs: number): number[] {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + waitMs;
  let left = pids.filter(isRunning);
  while (left.length > 0 && Date.now() < deadline) {
    sleepSync(20);
    left = left.filter(isRunning);
  }
  return left;
}

/** Removes one instance's namespaces (and everything in them) and its run directory. Idempotent. */
export function removeInstanceSync(instance: InstanceResources, log?: Logger): void {
  instance.beforeRemove?.();
  const existing = new Set(safeListNamespaces());
  for (const namespace of instance.namespaces) {
    if (!existing.has(namespace)) continue;
    const pids = pidsIn(namespace);
    const stubborn = stopAll(pids, 'SIGTERM', 1_000);
    if (stubborn.length > 0) stopAll(stubborn, 'SIGKILL', 1_000);
    try {
      runSync('ip', ['netns', 'delete', namespace]);
    } catch (err) {
      log?.error({ err, namespace }, 'could not delete a region namespace');
    }
  }
  rmSync(instance.runDir, { recursive: true, force: true });
}

function safeListNamespaces(): string[] {
  try {
    return listNamespaces();
  } catch {
    return [];
  }
}

function ownerAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes instances left by processes that no longer exist; returns their ids. */
export function cleanupStaleRegions(log?: Logger): string[] {
  const instances = new Map<string, InstanceResources>();
  const instanceOf = (pid: string, tag: string) => {
    const id = `${pid}-${tag}`;
    if (!instances.has(id)) instances.set(id, { id, namespaces: [], runDir: runDirFor(id) });
    return instances.get(id)!;
  };
  for (const namespace of safeListNamespaces()) {
    const match = INSTANCE_NAME.exec(namespace);
    if (match) instanceOf(match[1], match[2]).namespaces.push(namespace);
  }
  for (const entry of existsSync(tmpdir()) ? readdirSync(tmpdir()) : []) {
    const match = RUN_DIR_NAME.exec(entry);
    if (match) instanceOf(match[1], match[2]);
  }
  const stale = [...instances.values()].filter((instance) => !ownerAlive(Number(instance.id.split('-')[0])));
  for (const instance of stale) {
    log?.warn(
      { id: instance.id, namespaces: instance.namespaces },
      'removing emulated regions left by a process that is gone',
    );
    removeInstanceSync(instance, log);
  }
  return stale.map((instance) => instance.id);
}

// Instances of this process that are up, for the signal and exit handlers.
const live = new Map<string, InstanceResources>();
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

function removeAllLive(): void {
  for (const instance of live.values()) removeInstanceSync(instance);
  live.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  removeAllLive();
  uninstall();
  // With our handler gone the signal does what it would have done: usually end the process.
  process.kill(process.pid, signal);
}

function install(): void {
  for (const signal of SIGNALS) process.on(signal, onSignal);
  process.on('exit', removeAllLive);
}

function uninstall(): void {
  for (const signal of SIGNALS) process.off(signal, onSignal);
  process.off('exit', removeAllLive);
}

/** Tracks an instance from before its first namespace exists until it is removed. */
export function trackInstance(instance: InstanceResources): void {
  if (live.size === 0) install();
  live.set(instance.id, instance);
}

export function untrackInstance(id: string): void {
  live.delete(id);
  if (live.size === 0) uninstall();
}
