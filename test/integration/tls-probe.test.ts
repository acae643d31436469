// The tls probe against real loopback servers: the lab's TLS servers (trusted through the lab
// CA, as a real client would verify), and a few of the test's own for failures the lab does
// not keep running (a reset in the middle of the handshake, a server that never answers).
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import type { ResultOf } from '../../contracts/result.js';
import { analyzeRun } from '../../coordinator/analysis.js';
import { createLogger } from '../../common/log.js';
import { median } from '../../common/stats.js';
import type { LabServerName } from '../../lab/index.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { labForThisFile } from '../helpers/lab.js';

const log = createLogger('test', 'silent');
const lab = labForThisFile();

/** Every job of one tls experiment against `url`, by version. */
async function runTls(url: string, experiment: string, tls = `{ ca: "${lab.caFile}" }`): Promise<ResultOf<'tls'>[]> {
  const jobs = await jobsOf(`
name: tls-test
targets:
  - { name: target, url: "${url}", tls: ${tls} }
experiments:
  - { probe: tls, ${experiment} }
`);
  const results: ResultOf<'tls'>[] = [];
  for (const job of jobs) results.push((await executeJob(job, { region: 'local', log })) as ResultOf<'tls'>);
  return results;
}

const labUrl = (name: LabServerName) => lab.url(name);

/** A loopback server of the test's own; `onSocket` decides what it does to each connection. */
async function rawServer(onSocket: (socket: net.Socket) => void): Promise<{ url: string; close(): void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}/`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe('tls probe', () => {
  test('TLS 1.2 and 1.3 separately: connect and handshake apart, one connection per handshake, the certificate read', async () => {
    const accepted = lab.servers.https.connectionsAccepted();
    const results = await runTls(labUrl('https'), 'samples: 10');
    assert.deepEqual(
      results.map((r) => r.variant.version),
      ['1.2', '1.3'],
    );
    for (const r of results) {
      const d = r.details!;
      assert.equal(r.ok, true, JSON.stringify(r.error));
      assert.equal(d.tlsVersion, `TLSv${r.variant.version}`);
      assert.equal(d.alpn, 'http/1.1', 'the lab https server selects http/1.1 from h2, http/1.1');
      assert.ok(d.cipher);
      assert.equal(d.samples.length, 20, '10 full and 10 resumed');
      assert.equal(r.summary.connectionsOpened, 20);
      assert.ok(d.samples.every((s) => s.phases.connect! > 0 && s.phases.tls! > 0 && s.tlsVersion === d.tlsVersion));
      assert.equal(d.handshakeMs?.n, 10);
      assert.equal(d.certificate?.subject, 'CN=localhost');
      assert.equal(d.certificate?.issuer, 'CN=probefleet lab CA');
      assert.equal(d.certificate?.verifyError, null);
      assert.equal(d.certNotAfter, d.certificate?.notAfter);
      assert.ok(d.certificate!.daysLeft! > 29 && d.certificate!.daysLeft! <= 30, String(d.certificate!.daysLeft));
      assert.deepEqual(r.findings, [], 'a 30-day certificate is not flagged at the default 21 days');
    }
    assert.equal(lab.servers.https.connectionsAccepted() - accepted, 40, 'the server counted the same connections');
  });

  test('resumed handshakes are marked resumed, and the saving is what their samples say', async () => {
    // Whether a resumed handshake is faster is the server's and the machine's business (on a busy
    // machine a fraction of a millisecond drowns in noise): the test checks what the probe says,
    // not how fast the lab is. docs/probes.md shows measured savings.
    for (const r of await runTls(labUrl('https'), 'samples: 30')) {
      const d = r.details!;
      const full = d.samples.filter((s) => s.kind === 'full');
      const resumed = d.samples.filter((s) => s.kind === 'resumed');
      assert.ok(
        full.every((s) => !s.sessionOffered && !s.resumed),
        'full handshakes offer no session',
      );
      assert.ok(
        resumed.every((s) => s.sessionOffered && s.resumed),
        `TLS ${r.variant.version}: every offered session was resumed`,
      );
      assert.deepEqual(d.resumption, { attempted: 30, sessionsOffered: 30, resumed: 30 });
      assert.equal(d.resumedHandshakeMs?.n, 30);
      const saving = median(full.map((s) => s.phases.tls!)) - median(resumed.map((s) => s.phases.tls!));
      assert.ok(
        Math.abs(d.resumptionSavingMs! - saving) < 1e-9,
        `TLS ${r.variant.version}: ${d.resumptionSavingMs} vs ${saving}`,
      );
    }
  });

  test('the TLS-1.2-only server is seen as 1.2 and flagged TLS13_UNAVAILABLE', async () => {
    const [v12, v13] = await runTls(labUrl('tls12'), 'samples: 3');
    assert.equal(v12.ok, true);
    assert.equal(v12.details?.tlsVersion, 'TLSv1.2');
    assert.deepEqual(v12.findings, []);
    assert.equal(v13.ok, false);
    assert.equal(v13.error?.code, 'TLS_VERSION_UNSUPPORTED');
    assert.equal(v13.details?.tlsVersion, null);
    assert.deepEqual(
      v13.findings.map((f) => f.code),
      ['TLS13_UNAVAILABLE'],
    );
  });

  test('a server that never resumes is flagged NO_SESSION_RESUMPTION, for each version', async () => {
    for (const r of await runTls(labUrl('no-resume'), 'samples: 3')) {
      assert.equal(r.ok, true);
      assert.deepEqual(r.details?.resumption, { attempted: 3, sessionsOffered: 3, resumed: 0 });
      assert.equal(r.details?.resumedHandshakeMs, null);
      assert.deepEqual(
        r.findings.map((f) => f.code),
        ['NO_SESSION_RESUMPTION'],
      );
      assert.match(r.findings[0].evidence, new RegExp(`TLS ${r.variant.version.replace('.', '\\.')} .*resumed none`));
    }
  });

  test('CERT_EXPIRES_SOON follows its threshold, and the run keeps one per target', async () => {
    const results = await runTls(labUrl('https'), 'samples: 1, resumption: false, certExpiryWarningDays: 60');
    assert.ok(results.every((r) => r.findings.length === 1 && r.findings[0].code === 'CERT_EXPIRES_SOON'));
    assert.match(
      results[0].findings[0].evidence,
      /certificate CN=localhost .* expires on \d{4}-\d\d-\d\d, in (29|30) days \(warning below 60 days\)/,
    );
    const { findings, decisions } = analyzeRun(results);
    assert.deepEqual(
      findings.map((f) => f.code),
      ['CERT_EXPIRES_SOON'],
    );
    assert.equal(decisions.filter((d) => d.situation.startsWith('Server certificate expires')).length, 1);
  });

  test('an expired certificate let through by tls.insecure is still reported: CERT_EXPIRED, critical, in the decision table', async () => {
    const results = await runTls(labUrl('expired'), 'samples: 1, resumption: false', '{ insecure: true }');
    const [r] = results;
    assert.equal(r.ok, true);
    assert.equal(r.details?.certificate?.verifyError, 'CERT_HAS_EXPIRED');
    assert.ok(r.details!.certificate!.daysLeft! < 0);
    assert.deepEqual(
      r.findings.map((f) => [f.code, f.severity]),
      [['CERT_EXPIRED', 'critical']],
    );
    assert.match(r.findings[0].evidence, /expired on .*, 1 day ago/);
    const { findings, decisions } = analyzeRun(results);
    assert.deepEqual(
      findings.map((f) => f.code),
      ['CERT_EXPIRED'],
      'one per target, whichever versions saw it',
    );
    assert.equal(decisions.filter((d) => d.situation.startsWith('Server certificate has expired')).length, 1);
  });

  test('failures are codes: expired, self-signed, wrong host, refused', async () => {
    const cases: [string, string][] = [
      [labUrl('expired'), 'TLS_CERT_EXPIRED'],
      [labUrl('self-signed'), 'TLS_CERT_UNTRUSTED'],
      [labUrl('wrong-host'), 'TLS_HOSTNAME_MISMATCH'],
      ['https://127.0.0.1:9/', 'CONNECTION_REFUSED'],
      [lab.url('keepalive').replace('http:', 'https:'), 'TLS_HANDSHAKE_FAILED'], // an HTTP port answers no TLS
    ];
    for (const [url, code] of cases) {
      const [r] = await runTls(url, 'samples: 5, versions: ["1.3"]');
      assert.equal(r.ok, false, url);
      assert.equal(r.error?.code, code, `${url}: ${r.error?.message}`);
      assert.equal(r.details?.samples.length, 3, 'stops after 3 failed handshakes in a row');
      assert.ok(r.details?.samples.every((s) => s.error?.code === code));
      assert.equal(r.details?.certificate, null);
    }
  });

  test('a reset in the middle of the handshake is TLS_HANDSHAKE_RESET; a silent server times out within the bound', async () => {
    const resetting = await rawServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
    const silent = await rawServer((socket) => socket.resume());
    try {
      const [reset] = await runTls(resetting.url, 'samples: 1, versions: ["1.3"], resumption: false');
      assert.equal(reset.error?.code, 'TLS_HANDSHAKE_RESET', reset.error?.message);

      const [quiet] = await runTls(silent.url, 'samples: 1, versions: ["1.3"], resumption: false, timeoutMs: 300');
      assert.equal(quiet.error?.code, 'CONNECT_TIMEOUT', quiet.error?.message);
      assert.match(quiet.error!.message, /TLS handshake: no answer/);
      assert.ok(quiet.summary.durationMs < 3000, `took ${quiet.summary.durationMs} ms`);
    } finally {
      resetting.close();
      silent.close();
    }
  });
});
