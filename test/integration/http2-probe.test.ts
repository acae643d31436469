// The http2 probe against real loopback servers: the lab's (HTTP/2 by ALPN, h2c, HTTP/1.1 only,
// no ALPN), and the test's own servers that accept a connection and then never answer.
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { describe, test } from 'node:test';
import type { ResultOf } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { createLabCa } from '../../lab/certs.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { labForThisFile } from '../helpers/lab.js';

const log = createLogger('test', 'silent');
const lab = labForThisFile();

async function runHttp2(url: string, experiment = '', tls = `{ ca: "${lab.caFile}" }`): Promise<ResultOf<'http2'>> {
  const [job] = await jobsOf(`
name: http2-test
targets:
  - name: target
    url: "${url}"
${url.startsWith('https:') ? `    tls: ${tls}` : ''}
experiments:
  - { probe: http2, ${experiment} }
`);
  return (await executeJob(job, { region: 'local', log })) as ResultOf<'http2'>;
}

const codes = (r: ResultOf<'http2'>) => r.findings.map((f) => f.code).sort();

/** A server of the test's own that takes connections (and TLS handshakes, given options) and never says a word. */
async function silentServer(tlsOptions?: tls.TlsOptions): Promise<{ url: string; close(): void }> {
  const sockets = new Set<net.Socket>();
  const keep = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.resume();
  };
  const server = tlsOptions ? tls.createServer(tlsOptions, keep) : net.createServer(keep);
  server.on('connection', (socket: net.Socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `${tlsOptions ? 'https' : 'http'}://127.0.0.1:${(server.address() as net.AddressInfo).port}/`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe('http2 probe', () => {
  test('HTTP/2 by ALPN: repeat requests carry fewer header bytes than HTTP/1.1 for the same request; one connection for N', async () => {
    const accepted = lab.servers.h2.connectionsAccepted();
    const r = await runHttp2(lab.url('h2'), 'repeats: 4, concurrent: 12');
    const d = r.details!;
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.deepEqual(d.alpn, { offered: ['h2', 'http/1.1'], selected: 'h2' });
    assert.deepEqual(
      d.h2Requests.map((q) => [q.seq, q.status]),
      [
        [0, 200],
        [1, 200],
        [2, 200],
        [3, 200],
        [4, 200],
      ],
    );
    const h1 = d.h1HeaderBytes!;
    const first = d.h2HeaderBytesFirst!;
    const repeat = d.h2HeaderBytesRepeat!;
    // The same request: HPACK shrinks it on the first request, and to index references on repeats.
    assert.ok(repeat.request < first.request && first.request < h1.request, JSON.stringify({ h1, first, repeat }));
    assert.ok(repeat.response < first.response && first.response < h1.response, JSON.stringify({ h1, first, repeat }));
    assert.equal(
      h1.request,
      Buffer.byteLength(
        `GET / HTTP/1.1\r\nHost: ${new URL(lab.url('h2')).host}\r\nuser-agent: probefleet\r\naccept: */*\r\n\r\n`,
      ),
    );
    assert.equal(d.h2cPriorKnowledge, null, 'h2c is for http:// targets');
    assert.equal(d.h2cUpgrade, null);

    assert.equal(d.multiplexing.requests, 12);
    assert.equal(d.multiplexing.h2?.connectionsOpened, 1);
    assert.equal(d.multiplexing.h2?.errors, 0);
    assert.ok(
      d.multiplexing.h1!.connectionsOpened > 1 && d.multiplexing.h1!.connectionsOpened <= 6,
      JSON.stringify(d.multiplexing),
    );
    // first connection + the HTTP/1.1 head + the HTTP/1.1 pool + one HTTP/2 connection
    const opened = 1 + 1 + d.multiplexing.h1!.connectionsOpened + 1;
    assert.equal(r.summary.connectionsOpened, opened);
    assert.equal(lab.servers.h2.connectionsAccepted() - accepted, opened, 'the server counted the same connections');
    assert.deepEqual(r.findings, []);
  });

  test('an HTTP/1.1-only TLS server gives H2_NOT_NEGOTIATED and HTTP1_ONLY_MANY_CONNECTIONS', async () => {
    const r = await runHttp2(lab.url('https'), 'concurrent: 8');
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(r.details?.alpn?.selected, 'http/1.1');
    assert.ok(r.details?.h1HeaderBytes);
    assert.equal(r.details?.h2HeaderBytesFirst, null);
    assert.equal(r.details?.multiplexing.h2, null);
    assert.deepEqual(codes(r), ['H2_NOT_NEGOTIATED', 'HTTP1_ONLY_MANY_CONNECTIONS']);
    assert.match(r.findings.find((f) => f.code === 'H2_NOT_NEGOTIATED')!.evidence, /the server selected http\/1\.1$/);
  });

  test('the no-ALPN server gives a result within the timeout, not a hang', async () => {
    const r = await runHttp2(lab.url('no-alpn'), 'concurrent: 4, timeoutMs: 2000');
    assert.ok(r.summary.durationMs < 2000, `took ${r.summary.durationMs} ms`);
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.deepEqual(r.details?.alpn, { offered: ['h2', 'http/1.1'], selected: null });
    assert.ok(r.details?.h1HeaderBytes, 'HTTP/1.1 still works there');
    assert.ok(codes(r).includes('H2_NOT_NEGOTIATED'));
    assert.match(r.findings.find((f) => f.code === 'H2_NOT_NEGOTIATED')!.evidence, /no protocol at all \(no ALPN\)/);
  });

  test('a plain HTTP/1.1 server: h2c prior knowledge refused, the upgrade ignored, both reported unsupported', async () => {
    const r = await runHttp2(lab.url('keepalive'), 'concurrent: 8');
    const d = r.details!;
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.equal(d.alpn, null);
    assert.deepEqual(d.h2cPriorKnowledge, {
      supported: false,
      outcome: 'http1',
      answer: 'protocol error: answered "HTTP/1.1 400 Bad Request"',
    });
    assert.deepEqual(d.h2cUpgrade, {
      supported: false,
      outcome: 'http1',
      answer: 'answered HTTP/1.1 200, ignored the upgrade',
    });
    assert.equal(d.h2HeaderBytesFirst, null);
    assert.ok(d.h1HeaderBytes);
    assert.deepEqual(d.errors, [], 'refusals are answers, not failures');
    assert.equal(r.summary.errors, 0);
    assert.deepEqual(codes(r), ['H2C_UNSUPPORTED', 'HTTP1_ONLY_MANY_CONNECTIONS']);
  });

  test('the h2c server: prior knowledge and Upgrade both supported, header bytes measured over h2c', async () => {
    const r = await runHttp2(lab.url('h2c'), 'repeats: 2, concurrent: 8');
    const d = r.details!;
    assert.equal(r.ok, true, JSON.stringify(r.error));
    assert.deepEqual(d.h2cPriorKnowledge, { supported: true, outcome: 'http2', answer: 'answered HTTP/2 200' });
    assert.equal(d.h2cUpgrade?.outcome, 'http2', d.h2cUpgrade?.answer);
    assert.equal(d.h2cUpgrade?.supported, true);
    assert.ok(d.h2HeaderBytesRepeat!.request < d.h1HeaderBytes!.request);
    assert.equal(d.multiplexing.h2?.connectionsOpened, 1);
    assert.deepEqual(r.findings, []);
  });

  test('servers that never answer: every attempt ends at its time bound with what happened', async () => {
    const plain = await silentServer();
    // TLS done, h2 selected, then silence: the HTTP/2 requests must not hang.
    const cert = await (await createLabCa()).issue({ hosts: ['127.0.0.1'] });
    const secure = await silentServer({ key: cert.keyPem, cert: cert.certPem, ALPNProtocols: ['h2'] });
    try {
      const quiet = await runHttp2(plain.url, 'concurrent: 2, timeoutMs: 300');
      assert.ok(quiet.summary.durationMs < 5000, `took ${quiet.summary.durationMs} ms`);
      const noAnswer = { supported: false, outcome: 'no-answer', answer: 'no answer within 300 ms' };
      assert.deepEqual(quiet.details?.h2cPriorKnowledge, noAnswer);
      assert.deepEqual(quiet.details?.h2cUpgrade, noAnswer);
      assert.equal(quiet.ok, false);
      assert.equal(quiet.error?.code, 'RESPONSE_TIMEOUT');
      assert.deepEqual(
        quiet.details?.errors.map((e) => [e.step, e.code]),
        [
          ['h1-headers', 'RESPONSE_TIMEOUT'],
          ['multiplex-h1', 'RESPONSE_TIMEOUT'],
        ],
      );
      // Called what it is: no answer at all, not "h2c unsupported".
      assert.deepEqual(
        quiet.findings.map((f) => f.code),
        ['SERVER_NO_ANSWER'],
      );
      assert.match(
        quiet.findings[0].evidence,
        /^HTTP\/2 prior knowledge: no answer within 300 ms; Upgrade: h2c: no answer within 300 ms; HTTP\/1\.1: RESPONSE_TIMEOUT/,
      );

      const mute = await runHttp2(secure.url, 'concurrent: 2, timeoutMs: 300', '{ insecure: true }');
      assert.ok(mute.summary.durationMs < 5000, `took ${mute.summary.durationMs} ms`);
      assert.equal(mute.details?.alpn?.selected, 'h2');
      assert.equal(mute.error?.code, 'RESPONSE_TIMEOUT');
      assert.deepEqual(mute.details?.errors.find((e) => e.step === 'h2-headers')?.code, 'RESPONSE_TIMEOUT');
      assert.equal(mute.details?.multiplexing.h2?.errors, 2);
    } finally {
      plain.close();
      secure.close();
    }
  });

  test("the job's time bound stops the probe mid-step and skips the steps after it", async () => {
    const plain = await silentServer();
    try {
      const [job] = await jobsOf(`
name: http2-deadline
jobTimeoutSeconds: 1
targets: [{ name: target, url: "${plain.url}" }]
experiments: [{ probe: http2, timeoutMs: 60000 }]
`);
      const r = (await executeJob(job, { region: 'local', log })) as ResultOf<'http2'>;
      assert.ok(r.summary.durationMs < 5000, `took ${r.summary.durationMs} ms`);
      assert.equal(r.error?.code, 'DEADLINE_EXCEEDED');
      assert.deepEqual(
        r.details?.errors.map((e) => [e.step, e.code]),
        [['h2-headers', 'DEADLINE_EXCEEDED']],
      );
      assert.equal(r.details?.h2cPriorKnowledge, null, 'cut short, not answered');
      assert.equal(r.details?.multiplexing.h1, null);
      assert.equal(r.summary.connectionsOpened, 1);
    } finally {
      plain.close();
    }
  });

  test('a target that refuses connections is an error with a code, not a crash', async () => {
    const r = await runHttp2('http://127.0.0.1:9/');
    assert.equal(r.ok, false);
    assert.equal(r.error?.code, 'CONNECTION_REFUSED');
    assert.equal(r.details, null);
  });
});
