// Entry point of the `cold` reuse mode's node client: one fresh process, one connection, one
// request, then exit; prints the sample as JSON. Spawned by worker/cold-clients.ts.
// It speaks HTTP with node:http over the same timed connector rather than undici, because
// loading undici alone takes longer than Node's own start; what is measured is the cost of a
// process per request, not of one library's load time.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { text } from 'node:stream/consumers';
import type { RequestSample } from '../../contracts/common.js';
import type { JobTarget } from '../../contracts/job.js';
import { classifyError } from '../classify-error.js';
import { connectionPhases, TimedConnector } from '../http/connector.js';
import { proxyOf } from '../http/proxy.js';
import { overResponseCap, responseTooLarge, WireError } from '../http/wire.js';
import { TargetAddresses } from '../target-addresses.js';
import { TargetPolicy, type TargetPolicySettings } from '../target-policy.js';

export interface ColdRequestInput {
  target: JobTarget;
  timeoutMs: number;
  /** The worker's target policy, applied here as in the worker (the child resolves the name
   * itself, as the target's `dns` and `ipFamily` say: a new process has no cache). */
  policy: TargetPolicySettings;
}

export interface ColdRequestOutput {
  sample: RequestSample;
  connectionsOpened: number;
  altSvc: string[];
}

async function coldRequest({ target, timeoutMs, policy }: ColdRequestInput): Promise<ColdRequestOutput> {
  const url = new URL(target.url);
  const secure = url.protocol === 'https:';
  const connector = new TimedConnector({
    tls: target.tls,
    proxy: proxyOf(target),
    resumeTlsSessions: false,
    alpn: ['http/1.1'],
    timeoutMs,
    policy: new TargetAddresses(new TargetPolicy(policy), target, AbortSignal.timeout(timeoutMs)),
  });
  const start = performance.now();
  const fail = (err: unknown): ColdRequestOutput => ({
    sample: {
      seq: 0,
      newConnection: connector.connections.length > 0,
      phases: { total: performance.now() - start },
      bodyBytes: 0,
      error: classifyError(err),
    },
    connectionsOpened: connector.connections.length,
    altSvc: [],
  });
  let socket;
  try {
    socket = await connector.open(url.hostname, Number(url.port) || (secure ? 443 : 80), secure);
  } catch (err) {
    return fail(err);
  }
  const c = connector.connections[0];
  return new Promise((resolve) => {
    let sentAt = 0;
    let response: http.IncomingMessage | undefined;
    // One bound for the whole exchange, connect included, as TimedHttpClient has: node:http's
    // `timeout` is an idle timer on the socket, which a body trickling in never trips.
    const bound = setTimeout(
      () =>
        response
          ? response.destroy(new WireError(`the body did not end within ${timeoutMs} ms`, 'EWIRE_BODY_TIMEOUT'))
          : req.destroy(new WireError(`no response within ${timeoutMs} ms`, 'EWIRE_TIMEOUT')),
      Math.max(0, start + timeoutMs - performance.now()),
    );
    const req = http.request(
      {
        method: target.method ?? 'GET',
        path: url.pathname + url.search,
        headers: { ...target.headers, host: url.host, connection: 'close' },
        createConnection: () => socket,
      },
      (res) => {
        response = res;
        const headersAt = performance.now();
        let bodyBytes = 0;
        res.on('data', (chunk: Buffer) => {
          bodyBytes += chunk.length;
          if (overResponseCap(bodyBytes)) res.destroy(responseTooLarge());
        });
        res.on('error', (err) => resolve(fail(err)));
        res.on('end', () => {
          const end = performance.now();
          clearTimeout(bound);
          resolve({
            sample: {
              seq: 0,
              status: res.statusCode,
              newConnection: true,
              phases: {
                ...connectionPhases(c),
                processing: headersAt - sentAt,
                transfer: end - headersAt,
                total: end - start,
              },
              bodyBytes,
              serverClosed: res.headers.connection === 'close',
            },
            connectionsOpened: connector.connections.length,
            altSvc: res.headers['alt-svc'] === undefined ? [] : [res.headers['alt-svc']],
          });
        });
      },
    );
    req.on('error', (err) => resolve(fail(err)));
    req.end(target.body, () => (sentAt = performance.now()));
  });
}

// The input comes on stdin, not in argv: its headers may hold secrets, and argv is visible to `ps`.
if (process.argv[2] === '-') {
  const output = await coldRequest(JSON.parse(await text(process.stdin)) as ColdRequestInput);
  process.stdout.write(JSON.stringify(output));
  process.exit(0);
}
