// Test files run concurrently (test/run-tests.ts); a file that must not share the machine with
// another of its kind takes a named lock for its whole run: `await runAlone('realtime')` at its
// top level. Files measuring at a real-time priority (the emulated regions, compare's runs) take
// 'realtime', so that their measured processes never compete with each other for the CPUs;
// ordinary work cannot delay them (it runs at normal priority).
//
// The lock is a directory (mkdir is atomic) holding the owner's pid, under the run's lock folder
// (PROBEFLEET_TEST_LOCKS, set by run-tests.ts; a folder of the machine's temp directory otherwise,
// so that files run by hand with `node --test` take turns too). It is released when the process
// exits, and taken over when its owner is gone (a file killed by the runner's timeout).
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 200;

const lockRoot = () => process.env.PROBEFLEET_TEST_LOCKS || path.join(tmpdir(), 'probefleet-test-locks');

function ownerAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(lock, 'pid'), 'utf8'));
  } catch {
    // Being created (its owner writes the pid next), or left by an owner that died in between.
    try {
      return Date.now() - statSync(lock).mtimeMs < 5_000;
    } catch {
      return false;
    }
  }
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits until no other process holds the lock `name`, then holds it until this process exits. */
export async function runAlone(name: string): Promise<void> {
  const root = lockRoot();
  mkdirSync(root, { recursive: true });
  const lock = path.join(root, name);
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (!ownerAlive(lock)) rmSync(lock, { recursive: true, force: true });
      else await sleep(POLL_MS);
    }
  }
  writeFileSync(path.join(lock, 'pid'), String(process.pid));
  process.once('exit', () => rmSync(lock, { recursive: true, force: true }));
}
