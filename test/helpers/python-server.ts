// Debian's python3 http.server, for tests whose subject is what a common server does: keep-alive
// with Nagle on (the stall), 501 for a method it does not serve.
import { spawn, type ChildProcess } from 'node:child_process';
import { onPath } from './prometheus.js';

/** Test options: skip outside CI when python3 is missing (under CI the test runs and fails). */
export const needsPython = {
  skip: process.env.CI !== 'true' && !onPath('/usr/bin/python3') ? 'Debian python3 not installed' : false,
};

/** Debian's python3 http.server with keep-alive (protocol_version HTTP/1.1), on a free port. */
export async function startPythonServer(dir: string): Promise<{ url: string; process: ChildProcess }> {
  const script = [
    'import http.server, sys',
    'class H(http.server.SimpleHTTPRequestHandler):',
    "    protocol_version = 'HTTP/1.1'",
    '    def log_message(self, *a): pass',
    `s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), lambda *a: H(*a, directory=${JSON.stringify(dir)}))`,
    'print(s.server_address[1], flush=True)',
    's.serve_forever()',
  ].join('\n');
  const child = spawn('/usr/bin/python3', ['-c', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`python3 http.server exited (${code})`)));
    child.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
  });
  return { url: `http://127.0.0.1:${port}`, process: child };
}
