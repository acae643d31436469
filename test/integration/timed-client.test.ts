// TimedHttpClient.request, the sequential probes' per-request path: one time bound per client
// and the job's signal watched once per client must still cut each request that outlives them,
// with the code that says which; and the warm-up a worker does at start runs its jobs against
// its own throwaway server.
import assert from 'node:assert/strict';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { ConnectError, TimedConnector } from '../../worker/http/connector.js';
import { TimedHttpClient } from '../../worker/http/timed-client.js';
import { EMBEDDED_POLICY_SETTINGS, TargetPolicy } from '../../worker/target-policy.js';
import { warmUpRequestPath } from '../../worker/warm-up.js';

const HEAD = 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: keep-alive\r\n\r\n';

/** Per request: `drip` sends the head, then a body byte every 50 ms (each gap well within undici's
 * own body timeout, so only the overall bound can end it); `silent` never answers. */
async function hostileServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('data', (chunk) => {
      if (!chunk.toString('latin1').startsWith('GET /drip')) return;
      socket.write(HEAD);
      const timer = setInterval(() => socket.write('x'), 50);
      socket.once('close', () => clearInterval(timer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('TimedHttpClient.request under its bounds', () => {
  let server: Awaited<ReturnType<typeof hostileServer>>;
  before(async () => {
    server = await hostileServer();
  });
  after(() => server.close());

  const clientFor = (path: string, timeoutMs: number) =>
    new TimedHttpClient({
      target: { name: 'hostile', url: `${server.url}${path}` },
      timeoutMs,
      policy: new TargetPolicy(EMBEDDED_POLICY_SETTINGS),
    });

  test('a body that drips past the bound: BODY_TIMEOUT at the bound, status kept; the next request is cut too', async () => {
    const client = clientFor('/drip', 400);
    try {
      for (const seq of [0, 1]) {
        const start = performance.now();
        const sample = await client.request({ seq });
        const took = performance.now() - start;
        assert.equal(sample.error?.code, 'BODY_TIMEOUT', JSON.stringify(sample));
        assert.equal(sample.status, 200);
        assert.ok(took >= 390 && took < 2_000, `cut after ${took} ms`);
      }
    } finally {
      await client.close();
    }
  });

  test('no answer: RESPONSE_TIMEOUT at the bound', async () => {
    const client = clientFor('/silent', 300);
    try {
      const sample = await client.request({ seq: 0 });
      assert.equal(sample.error?.code, 'RESPONSE_TIMEOUT', JSON.stringify(sample));
      assert.equal(sample.status, undefined);
    } finally {
      await client.close();
    }
  });

  test("the job's signal cuts the request under way, and one aborted before a request stops it at once", async () => {
    const client = clientFor('/silent', 10_000);
    const job = new AbortController();
    try {
      setTimeout(() => job.abort(new DOMException("the job's time bound", 'TimeoutError')), 200);
      const start = performance.now();
      const sample = await client.request({ seq: 0, signal: job.signal });
      assert.equal(sample.error?.code, 'DEADLINE_EXCEEDED', JSON.stringify(sample));
      assert.ok(performance.now() - start < 2_000);
      const next = await client.request({ seq: 1, signal: job.signal });
      assert.equal(next.error?.code, 'DEADLINE_EXCEEDED');
      assert.equal(next.newConnection, false, 'nothing was sent');
    } finally {
      await client.close();
    }
  });
});

test('a TLS handshake nobody answers ends at the connect bound, as a timeout of the tls phase', async () => {
  const server = await hostileServer();
  const connector = new TimedConnector({
    alpn: ['http/1.1'],
    resumeTlsSessions: false,
    timeoutMs: 300,
    policy: new TargetPolicy(EMBEDDED_POLICY_SETTINGS),
  });
  try {
    const start = performance.now();
    await assert.rejects(connector.open('127.0.0.1', Number(new URL(server.url).port), true), (err) => {
      assert.ok(err instanceof ConnectError);
      assert.equal(err.phase, 'tls');
      assert.equal(err.code, 'ETIMEDOUT');
      return true;
    });
    const took = performance.now() - start;
    assert.ok(took >= 290 && took < 2_000, `cut after ${took} ms`);
  } finally {
    await server.close();
  }
});

test('a response that ends its connection leaves error stacks as they were', async (t) => {
  const server = net.createServer((socket) =>
    socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok')),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const client = new TimedHttpClient({
    target: { name: 'closing', url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/` },
    timeoutMs: 2_000,
    policy: new TargetPolicy(EMBEDDED_POLICY_SETTINGS),
  });
  const limit = Error.stackTraceLimit;
  try {
    // The server closes the first; the client asks to close the second.
    for (const closeAfter of [false, true]) {
      const sample = await client.request({ seq: 0, closeAfter });
      assert.equal(sample.status, 200, JSON.stringify(sample));
      assert.equal(Error.stackTraceLimit, limit);
      assert.match(new Error('after').stack ?? '', /\n\s+at /);
    }
  } finally {
    await client.close();
  }
});

test('the warm-up runs its jobs against a server of its own and reports how many', async () => {
  const jobs = await warmUpRequestPath('local', createLogger('test-warm-up', 'silent'));
  // How many depends on the machine: it stops once the JIT has settled (8 jobs in a row no faster,
  // 20-30 jobs on a quiet machine) or after 2 s (7 jobs with two CPU hogs beside the suite). 0
  // means it failed.
  assert.ok(jobs >= 1, `${jobs} warm-up jobs`);
});
