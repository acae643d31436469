// What real servers and clients do, measured by the probes and checked against them: the `cold`
// mode's shell loop of Debian's curl against Debian's nginx (whose access log numbers each
// request's connection), nginx advertising HTTP/3 in Alt-Svc, and Python's http.server with
// keep-alive, which stalls every reused request on the delayed ACK (docs/development.md, "Traps in
// our dependencies").
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import type { ProbeResult, ResultOf } from '../../contracts/result.js';
import { analyzeRun } from '../../coordinator/analysis.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { productsJson } from '../../lab/content.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { needsNginx, startNginx, type Nginx } from '../helpers/nginx.js';
import { onPath } from '../helpers/prometheus.js';
import { tempDir } from '../helpers/temp-dir.js';
import { runAlone } from '../helpers/exclusive.js';
import { atRealtimePriority } from '../helpers/realtime.js';
import { needsPython, startPythonServer } from '../helpers/python-server.js';

// The gzip-waste and Nagle findings are measured at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

const log = createLogger('test', 'silent');
const BODY = 'hello from nginx\n';

async function run(plan: string, allowClientCommands = true): Promise<ProbeResult[]> {
  const results: ProbeResult[] = [];
  for (const job of await jobsOf(plan))
    results.push(await executeJob(job, { region: 'local', log, allowClientCommands }));
  return results;
}

/** `run` with this process and the server at a real-time priority: for the findings that judge
 * times (a control request's, a time to first byte against another's), which other work on the
 * machine must not decide. */
async function runAtRealtimePriority(plan: string, server: number): Promise<ProbeResult[]> {
  return (await atRealtimePriority(() => run(plan), [server])).value;
}

const reuse = (results: ProbeResult[], mode: string) =>
  results.find((r): r is ResultOf<'reuse'> & ProbeResult => r.probe === 'reuse' && r.variant.mode === mode)!;

describe('the cold mode runs curl, as a shell loop does, against nginx', needsNginx, () => {
  let nginx: Nginx;
  before(async () => {
    nginx = await startNginx([{ files: { 'hello.txt': BODY } }]);
  });
  after(() => nginx?.stop());

  test('by default: curl, one process and one connection per request, as nginx counts them', {
    skip: process.env.CI !== 'true' && !onPath('curl') ? 'curl not installed' : false,
  }, async () => {
    const results = await run(`
name: curl-loop
targets: [{ name: nginx, url: "${nginx.urls[0]}/hello.txt" }]
experiments: [{ probe: reuse, requests: 6, modes: [reused, cold] }]
`);
    const cold = reuse(results, 'cold');
    assert.equal(cold.ok, true, JSON.stringify(cold.error));
    assert.equal(cold.details!.client!.kind, 'curl');
    assert.match(cold.details!.client!.label, /^curl \d+\.\d+/);
    assert.equal(cold.summary.connectionsOpened, 6, 'curl counted one connection per process');
    assert.ok(cold.details!.samples.every((s) => s.status === 200 && s.bodyBytes === BODY.length));
    assert.ok(cold.details!.samples.every((s) => s.phases.connect !== undefined && s.phases.transfer !== undefined));

    // nginx's own log: the reused job's six requests on one connection, each curl's on its own.
    const logged = await nginx.accessLog();
    assert.equal(logged.length, 12);
    const [reusedLines, coldLines] = [logged.slice(0, 6), logged.slice(6)];
    assert.equal(new Set(reusedLines.map((l) => l.connection)).size, 1);
    assert.deepEqual(
      reusedLines.map((l) => l.connectionRequests),
      [1, 2, 3, 4, 5, 6],
    );
    assert.equal(new Set(coldLines.map((l) => l.connection)).size, 6);
    assert.ok(coldLines.every((l) => l.connectionRequests === 1));

    // Every output names the client that ran.
    const { decisions } = analyzeRun(results);
    const row = decisions.find((d) => d.situation.startsWith('A script starts a new process per request'))!;
    assert.equal(row.situation, 'A script starts a new process per request (a shell loop of curl)');
    assert.match(
      row.evidence,
      /^nginx from local: \S+ ms per request as separate curl processes vs \S+ ms over one connection$/,
    );
    const text = renderRunReport(
      buildRunReport({
        runId: 'curl-loop-run',
        mode: 'embedded',
        plan: (
          await parsePlan(
            `name: curl-loop\ntargets: [{ name: nginx, url: "${nginx.urls[0]}/" }]\nexperiments: [{ probe: reuse }]\n`,
            'p.yaml',
          )
        ).plan,
        startedAt: new Date(),
        finishedAt: new Date(),
        results,
      }),
    );
    assert.match(text, /local\s+nginx\s+cold \(curl \d+\.\d+[^)]*\)\s+6\s+6\s/);
  });

  test('on request: Node, or a command of the plan (embedded only: a worker refuses it)', async () => {
    const plan = `
name: clients
targets: [{ name: nginx, url: "${nginx.urls[0]}/hello.txt" }]
experiments:
  - { probe: reuse, requests: 2, modes: [cold], client: node }
  - { probe: reuse, requests: 2, modes: [cold], client: { command: [curl, -s, -o, /dev/null, "{url}"] } }
`;
    const [node, command] = (await run(plan)) as ResultOf<'reuse'>[];
    assert.deepEqual(node.details!.client, { kind: 'node', label: `node ${process.versions.node}` });
    assert.equal(node.summary.connectionsOpened, 2);
    assert.equal(command.ok, true, JSON.stringify(command.error));
    assert.deepEqual(command.details!.client, { kind: 'command', label: 'curl' });
    const nodeLoop = await run(`
name: node-loop
targets: [{ name: nginx, url: "${nginx.urls[0]}/hello.txt" }]
experiments: [{ probe: reuse, requests: 2, modes: [reused, cold], client: node }]
`);
    assert.equal(
      analyzeRun(nodeLoop).decisions.find((d) => d.situation.startsWith('A script'))!.situation,
      'A script starts a new process per request (a new Node process per request)',
    );

    const [, refused] = (await run(plan, false)) as ResultOf<'reuse'>[];
    assert.equal(refused.ok, false);
    assert.equal(refused.error!.code, 'INVALID_JOB');
    assert.match(refused.error!.message, /client\.command runs only in embedded runs/);
  });
});

describe('HTTP/3 advertised by nginx in Alt-Svc', needsNginx, () => {
  let nginx: Nginx;
  before(async () => {
    nginx = await startNginx([
      {
        files: { 'index.html': '<p>hello</p>\n' },
        directives: [`add_header alt-svc 'h3=":8443"; ma=3600, h3-29=":8443"' always;`],
      },
    ]);
  });
  after(() => nginx?.stop());

  test('every probe records it; the run says h3 on port 8443 for 3600 s, as an info finding and a report table', async () => {
    const results = await run(`
name: h3
targets: [{ name: nginx, url: "${nginx.urls[0]}/" }]
experiments:
  - { probe: reuse, requests: 2, modes: [reused, new] }
  - { probe: compression, encodings: [identity, gzip], requests: 1, gzipLevels: [1], brotliLevels: [], zstdLevels: [], repetitions: 1 }
  - { probe: http2, repeats: 1, concurrent: 2, h1Connections: 1, timeoutMs: 2000 }
  - { probe: drain, requests: 2, modes: [full] }
  - { probe: cors, allowedOrigins: [https://app.example], refusedOrigins: [https://evil.example] }
`);
    for (const r of results)
      assert.deepEqual(r.altSvc, ['h3=":8443"; ma=3600, h3-29=":8443"'], `${r.probe} ${JSON.stringify(r.variant)}`);
    const { findings } = analyzeRun(results);
    const h3 = findings.filter((f) => f.code === 'H3_ADVERTISED');
    assert.equal(h3.length, 1);
    assert.equal(h3[0].severity, 'info');
    assert.deepEqual(h3[0].data, { protocol: 'h3', port: 8443, maxAgeSeconds: 3600, host: '' });
    assert.match(
      h3[0].evidence,
      /^h3 on port 8443 for 3600 s \(Alt-Svc: .*; seen by reuse, compression, http2, drain, cors\); h3-29 on port 8443 for 86400 s/,
    );
    const text = renderRunReport(
      buildRunReport({
        runId: 'h3-run',
        mode: 'embedded',
        plan: (
          await parsePlan(
            `name: h3\ntargets: [{ name: nginx, url: "${nginx.urls[0]}/" }]\nexperiments: [{ probe: reuse }]\n`,
            'p.yaml',
          )
        ).plan,
        startedAt: new Date(),
        finishedAt: new Date(),
        results,
      }),
    );
    assert.match(text, /HTTP\/3 advertised \(Alt-Svc\)/);
    assert.match(text, /local\s+nginx\s+h3\s+\(same host\)\s+8443\s+3600 s\s+reuse, compression, http2, drain, cors/);
  });
});

describe("nginx's own gzip level, from its bytes; waste judged from its time to first byte", needsNginx, () => {
  let nginx: Nginx;
  before(async () => {
    const files = { 'products.json': productsJson() };
    const gzip = (level: number) => ['gzip on;', 'gzip_types application/json;', `gzip_comp_level ${level};`];
    nginx = await startNginx([
      { files, directives: gzip(1) },
      { files, directives: gzip(9) },
    ]);
  });
  after(() => nginx?.stop());

  const compressionOf = async (url: string) => {
    const [result] = (await runAtRealtimePriority(
      `
name: nginx-gzip
targets: [{ name: nginx, url: "${url}/products.json" }]
experiments: [{ probe: compression, encodings: [identity, gzip], requests: 7, gzipLevels: [1, 6, 9], brotliLevels: [], zstdLevels: [], repetitions: 3 }]
`,
      nginx.pid,
    )) as ResultOf<'compression'>[];
    assert.equal(result.ok, true, JSON.stringify(result.error));
    return result;
  };

  test("gzip_comp_level 1: zlib 1.2's level 1 to the byte (Node's zlib would have sent 3.8% less); no waste", async () => {
    const result = await compressionOf(nginx.urls[0]);
    assert.deepEqual(result.details!.serverGzip, {
      encodedBytes: 28_215,
      matches: [{ library: 'zlib', level: 1, bytes: 28_215 }],
      exact: true,
    });
    // The local table says what Node's zlib would give: not the server's bytes.
    assert.equal(result.details!.levelTable!.rows.find((r) => r.coding === 'gzip' && r.level === 1)!.bytes, 27_137);
    assert.equal(result.findings.filter((f) => f.code === 'GZIP_LEVEL_WASTE').length, 0);
  });

  test('gzip_comp_level 9: level 9, and GZIP_LEVEL_WASTE from the extra time to first byte nginx took', async () => {
    const result = await compressionOf(nginx.urls[1]);
    assert.deepEqual(result.details!.serverGzip!.matches, [{ library: 'zlib', level: 9, bytes: 19_236 }]);
    const waste = result.findings.find((f) => f.code === 'GZIP_LEVEL_WASTE');
    // On failure, each request's time to first byte by encoding: the finding needs gzip's clear of identity's.
    const ttfbs = result.details!.samples.map((s) => [s.acceptEncoding, s.phases.processing]);
    assert.ok(waste, JSON.stringify(ttfbs));
    assert.equal(waste.data.serverLevel, 9);
    assert.equal(waste.data.level6Bytes, 20_448);
    assert.ok((waste.data.serverExtraTtfbMs as number) > 0);
    assert.match(
      waste.evidence,
      /^the server's gzip answer is level 9 \(19,236 B, zlib 1\.2 \(nginx, Apache, Python\), exact size\); it adds /,
    );
  });
});

describe("Python's http.server with keep-alive: the Nagle stall, from the reused requests alone", needsPython, () => {
  let dir: string;
  let server: { url: string; process: ChildProcess };
  before(async () => {
    dir = tempDir('probefleet-python-');
    await writeFile(path.join(dir, 'small.json'), '{"ok":true,"id":42}');
    server = await startPythonServer(dir);
    // Python does its one-time work (imports, reading /etc/mime.types) on its first request; on a
    // busy machine that made the run's first request, the finding's control, as slow as a stall.
    await (await fetch(`${server.url}/small.json`)).text();
  });
  after(async () => {
    server?.process.kill();
    await rm(dir, { recursive: true, force: true });
  });

  test('modes: [reused] is enough to name NAGLE_DELAYED_ACK_STALL', async () => {
    const results = await runAtRealtimePriority(
      `
name: python
targets: [{ name: python, url: "${server.url}/small.json" }]
experiments: [{ probe: reuse, requests: 12, modes: [reused] }]
`,
      server.process.pid!,
    );
    const reused = reuse(results, 'reused');
    assert.equal(reused.ok, true, JSON.stringify(reused.error));
    assert.equal(reused.summary.connectionsOpened, 1, 'keep-alive held');
    const { findings, comparisons } = analyzeRun(results);
    assert.deepEqual(comparisons, [], 'no new mode, no comparison');
    const stall = findings.find((f) => f.code === 'NAGLE_DELAYED_ACK_STALL');
    assert.ok(stall, JSON.stringify(reused.details!.samples.map((s) => s.phases.total)));
    assert.match(
      stall.evidence,
      /at the delayed-ACK timer \(35-220 ms\) for bodies of 19 B, against \S+ ms for the first request \(a fresh connection\)/,
    );
  });
});
