// A benchmark child process: the floor under probefleet's HTTP/2 load numbers. C node:http2
// sessions with S streams each in a closed loop (a stream's next request goes out when its
// response ends), body discarded, nothing timed but the run: what node:http2 itself costs.
// Prints {requests, seconds} as JSON. probefleet's `load` in h2 mode / this = what probefleet
// adds to node:http2. With `--undici-loaded` it loads undici first (and uses nothing of it), as
// every worker has: that alone costs node:http2 ~10% here (bench/README.md, HTTP/2 load).
import http2 from 'node:http2';
import { performance } from 'node:perf_hooks';

const [url, connections, streams, seconds] = [
  process.argv[2],
  Number(process.argv[3]),
  Number(process.argv[4]),
  Number(process.argv[5]),
];
if (process.argv.includes('--undici-loaded')) await import('undici');
const { origin, pathname, search } = new URL(url);
const path = pathname + search;
let completed = 0;
let running = true;

function loop(session: http2.ClientHttp2Session, done: () => void): void {
  if (!running) return done();
  const stream = session.request({ ':path': path });
  stream.on('data', () => {});
  stream.on('end', () => {
    completed++;
    loop(session, done);
  });
  stream.on('error', (err) => {
    process.stderr.write(`h2-bare: ${err.message}\n`);
    process.exit(1);
  });
}

const sessions = await Promise.all(
  Array.from(
    { length: connections },
    () =>
      new Promise<http2.ClientHttp2Session>((resolve, reject) => {
        const session = http2.connect(origin, { rejectUnauthorized: false });
        session.once('connect', () => resolve(session));
        session.once('error', reject);
      }),
  ),
);
const startedAt = performance.now();
setTimeout(() => (running = false), seconds * 1000);
await Promise.all(
  sessions.flatMap((session) =>
    Array.from({ length: streams }, () => new Promise<void>((resolve) => loop(session, resolve))),
  ),
);
const elapsed = (performance.now() - startedAt) / 1000;
for (const session of sessions) session.close();
process.stdout.write(JSON.stringify({ requests: completed, seconds: elapsed }));
