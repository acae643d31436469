// Answers that once stopped a run, each through `probefleet run` as a user runs it: the run ends
// with its report, the saved JSON reads back, and the job keeps what it measured. A server push
// the server resets, malformed and oversized Alt-Svc values, 103 Early Hints before the response
// and the h2c upgrade, a certificate whose date is no date; and the level table's CPU work on an
// incompressible body, under a job bound of one second.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
// @peculiar/x509 needs the Reflect metadata API loaded first, as lab/certs.ts does.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { runReportSchema, type ProbeResult, type ResultOf, type RunReport } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { createLabCa } from '../../lab/certs.js';
import { startLab } from '../../lab/index.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf, writePlan } from '../helpers/plans.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const dir = tempDir('probefleet-hostile-answers-');
const log = createLogger('test', 'silent');

/** Runs `plan` embedded with the lab; the run's exit code, stderr and its JSON report, read back through the schema. */
async function runWithLab(name: string, plan: string): Promise<{ code: number; stderr: string; report: RunReport }> {
  const json = path.join(dir, `${name}.json`);
  const { code, stderr } = await runCli(['run', '--lab', await writePlan(plan), '--json', json]);
  const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8')));
  const again = await runCli(['report', json]);
  assert.equal(again.code, 0, `report ${json}: ${again.stderr}`);
  return { code, stderr, report };
}

const only = (report: RunReport, probe: string): ProbeResult => {
  const [result] = report.results.filter((r) => r.probe === probe);
  assert.ok(result, `a ${probe} result`);
  return result;
};

describe('answers that once stopped a run', () => {
  test('a server push reset by the server: a result, not a crash (push is off, as in browsers and curl)', async () => {
    const { code, stderr, report } = await runWithLab(
      'push',
      `name: push
targets: [{ name: push, url: "lab:h2-push-reset/" }]
experiments: [{ probe: http2, repeats: 1, concurrent: 2, timeoutMs: 2000 }]
`,
    );
    assert.equal(code, 0, stderr);
    const details = (only(report, 'http2') as ResultOf<'http2'>).details!;
    assert.match(
      details.h2cPriorKnowledge?.answer ?? '',
      /^protocol error: answered HTTP\/2 frames .*PUSH_PROMISE on stream 1, RST_STREAM on stream 2/,
    );
  });

  test('Alt-Svc with a malformed escape, a port out of range and a max age of 400 digits', async () => {
    const values = ['%="x:1"', 'h3=":99999"', `h3=":443"; ma=${'9'.repeat(400)}`];
    const targets = values.map(
      (v, i) => `  - { name: alt${i}, url: "lab:keepalive/alt-svc?value=${encodeURIComponent(v)}" }`,
    );
    const { code, stderr, report } = await runWithLab(
      'alt-svc',
      `name: alt-svc
targets:
${targets.join('\n')}
experiments: [{ probe: reuse, requests: 1, modes: [reused] }]
`,
    );
    assert.equal(code, 0, stderr);
    assert.deepEqual(
      report.results.map((r) => r.altSvc),
      values.map((v) => [v]),
      'each value is kept as it came',
    );
    const h3 = report.findings.filter((f) => f.code === 'H3_ADVERTISED');
    assert.equal(h3.length, 1, 'only the readable one advertises HTTP/3');
    assert.equal(h3[0].data?.maxAgeSeconds, 2 ** 31, 'a delta-seconds too large to hold is 2^31 (RFC 9111 §1.2.2)');
  });

  test('103 Early Hints before the 200 and before the 101: the final head is measured, both heads counted', async () => {
    const { code, stderr, report } = await runWithLab(
      'early-hints',
      `name: early-hints
targets: [{ name: hints, url: "lab:h2c/early-hints" }, { name: plain, url: "lab:h2c/" }]
experiments: [{ probe: http2, repeats: 1, concurrent: 2, timeoutMs: 2000 }]
`,
    );
    assert.equal(code, 0, stderr);
    const [hints, plain] = ['hints', 'plain'].map(
      (t) => (report.results.find((r) => r.target === t) as ResultOf<'http2'>).details!,
    );
    assert.equal(hints.h2cUpgrade?.supported, true, hints.h2cUpgrade?.answer);
    const interim = `HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n`.length;
    assert.ok(
      hints.h1HeaderBytes!.response > plain.h1HeaderBytes!.response + interim,
      `${hints.h1HeaderBytes!.response} B with the 103, ${plain.h1HeaderBytes!.response} B without`,
    );
  });
});

describe('a certificate whose date is no date', () => {
  let server: https.Server;
  let url: string;
  before(async () => {
    const ca = await createLabCa();
    const leaf = await ca.issue({ hosts: ['127.0.0.1'], notAfter: new Date('2030-12-25T00:00:00Z') });
    // Month 13, written into the signed certificate: its signature no longer holds (insecure: true below).
    const der = Buffer.from(new x509.X509Certificate(leaf.certPem).rawData);
    const at = der.indexOf('301225000000Z');
    assert.ok(at > 0, 'the notAfter UTCTime is in the certificate');
    der.write('301325000000Z', at, 'latin1');
    const certPem = new x509.X509Certificate(der).toString('pem');
    server = https.createServer({ key: leaf.keyPem, cert: certPem }, (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => server?.close());

  test('the handshakes are reported; the date is null and shown as unreadable', async () => {
    const { code, stderr, report } = await runWithLab(
      'bad-date',
      `name: bad-date
targets: [{ name: bad-date, url: "${url}", tls: { insecure: true } }]
experiments: [{ probe: tls, samples: 3, versions: ["1.3"], resumption: false }]
`,
    );
    assert.equal(code, 0, stderr);
    const result = only(report, 'tls') as ResultOf<'tls'>;
    assert.equal(result.ok, true, result.error?.message);
    assert.equal(result.details!.handshakeMs?.n, 3);
    assert.equal(result.details!.certificate?.notAfter, null);
    const text = await runCli(['report', path.join(dir, 'bad-date.json')]);
    assert.match(text.stdout, /unreadable date/);
  });
});

describe('CPU work on what a target sent stays under the job bound', () => {
  test('the level table of 4 MiB of random bytes with brotli 11: the job ends near its 1 s bound, the event loop never waits on it', async () => {
    const lab = await startLab({ log });
    try {
      const [job] = await jobsOf(`
name: level-table
jobTimeoutSeconds: 1
targets: [{ name: random, url: "${lab.url('keepalive')}large?bytes=4194304&random=1" }]
experiments: [{ probe: compression, encodings: [identity], requests: 1, brotliLevels: [11], gzipLevels: [9], zstdLevels: [19] }]
`);
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const started = performance.now();
      const result = await executeJob(job, { region: job.region, log });
      const tookMs = performance.now() - started;
      lag.disable();
      assert.equal(result.error?.code, 'DEADLINE_EXCEEDED', result.error?.message);
      assert.ok(tookMs < 1000 + 1500, `the job took ${Math.round(tookMs)} ms for a 1 s bound`);
      // brotli 11 on 4 MiB is 10 s of one synchronous call: on the event loop it would be all of it.
      assert.ok(lag.max / 1e6 < 1000, `the event loop waited ${Math.round(lag.max / 1e6)} ms at most`);
      const details = (result as ResultOf<'compression'>).details;
      assert.ok(details?.encodings[0].decodedBytes === 4 << 20, 'what was measured before the bound is kept');
    } finally {
      await lab.close();
    }
  });
});
