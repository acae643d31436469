// A real Go client for the drain probe's comparison: test/peers/go-drain-client (standard library
// only) built with Debian's golang-go (installed by test/services/ensure.sh), once per version of
// its source, into a folder under the temp directory that later runs reuse. Go's own caches go
// under the temp directory too, so it builds as root on a clean machine with no HOME and no network.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { onPath } from './prometheus.js';
import { REPO_ROOT } from './repo.js';

const run = promisify(execFile);
const SOURCE = path.join(REPO_ROOT, 'test/peers/go-drain-client/main.go');

/** Test options: skip outside CI when `go` is missing (under CI the test runs and fails). */
export const needsGo = {
  skip:
    process.env.CI !== 'true' && !onPath('go')
      ? 'go not installed: apt-get install golang-go (test/services/ensure.sh does)'
      : false,
};

/** What the Go client printed: connections its transport opened for `requests` sequential GETs. */
export interface GoDrainRun {
  goVersion: string;
  requests: number;
  connections: number;
  statuses: number[];
}

let built: Promise<string> | undefined;

/** The client's binary, built on first use (seconds), then reused while its source is unchanged. */
export function goDrainClient(): Promise<string> {
  built ??= build();
  return built;
}

async function build(): Promise<string> {
  const source = await readFile(SOURCE);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const root = path.join(tmpdir(), 'probefleet-go');
  const binary = path.join(root, `go-drain-client-${hash}`);
  if (existsSync(binary)) return binary;
  await mkdir(root, { recursive: true });
  // Built beside its final name and renamed: test files running at once never run half a binary.
  const partial = `${binary}.${process.pid}`;
  await run('go', ['build', '-o', partial, SOURCE], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      GOCACHE: path.join(root, 'cache'),
      GOPATH: path.join(root, 'gopath'),
      GOFLAGS: '',
      GOPROXY: 'off',
      GOTOOLCHAIN: 'local',
      CGO_ENABLED: '0',
    },
    timeout: 300_000,
  });
  await rename(partial, binary);
  return binary;
}

/** Runs the client: `requests` sequential GETs of `url`, each body closed unread. */
export async function runGoDrainClient(url: string, requests: number): Promise<GoDrainRun> {
  const { stdout } = await run(await goDrainClient(), ['-url', url, '-requests', String(requests)], {
    timeout: 60_000,
    env: { PATH: process.env.PATH, GODEBUG: 'http2client=0' },
  });
  return JSON.parse(stdout) as GoDrainRun;
}
