// A target's method, body and response checks against real servers: Debian's nginx (which
// answers with what it received: method, body length, content type), curl as the cold client,
// Python's http.server (501 for a method it does not serve), and the lab through real workers on
// Redis. A response that fails a check fails its job, with its own code, in every report format.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../common/log.js';
import { runReportSchema, type ProbeResult, type ResultOf, type RunReport } from '../../contracts/result.js';
import { startLab, type Lab } from '../../lab/index.js';
import { runMetricsOf } from '../../metrics/run-metrics.js';
import { createLabCa } from '../../lab/certs.js';
import { executeJob } from '../../worker/execute-job.js';
import { needsNginx, startNginx, type Nginx } from '../helpers/nginx.js';
import { jobsOf, writePlan } from '../helpers/plans.js';
import { startWorkerProcess, type CliProcess } from '../helpers/processes.js';
import { needsPython, startPythonServer } from '../helpers/python-server.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');

async function run(plan: string): Promise<ProbeResult[]> {
  const results: ProbeResult[] = [];
  for (const job of await jobsOf(plan)) results.push(await executeJob(job, { region: 'local', log }));
  return results;
}

const byTarget = (results: ProbeResult[], target: string, mode?: string) =>
  results.find((r) => r.target === target && (mode === undefined || (r.variant as { mode?: string }).mode === mode))!;

/** nginx answering with what it got, an error, a login page and JSON. */
const NGINX_LOCATIONS = [
  'location = /echo { default_type text/plain; return 200 "$request_method $content_length $http_content_type"; }',
  'location = /error { return 500 "boom\\n"; }',
  'location = /login { default_type text/html; return 200 "<form>please log in</form>\\n"; }',
  'location = /json { default_type application/json; return 200 \'{"status":"ok"}\'; }',
];

describe('methods, bodies and checks against nginx', needsNginx, () => {
  let nginx: Nginx;
  before(async () => {
    nginx = await startNginx([{ files: {}, directives: NGINX_LOCATIONS }]);
  });
  after(() => nginx?.stop());

  test('a POST with a JSON body reaches nginx as sent, over reused and new connections; the body check proves it', async () => {
    const results = await run(`
name: post
targets:
  - name: post
    url: "${nginx.urls[0]}/echo"
    method: POST
    body: '{"probe":true}'
    headers: { content-type: application/json }
    checks: { status: [200], bodyMatches: "^POST 14 application/json$", headers: { content-type: "^text/plain" } }
experiments: [{ probe: reuse, requests: 5, modes: [reused, new] }]
`);
    for (const mode of ['reused', 'new']) {
      const r = byTarget(results, 'post', mode) as ResultOf<'reuse'>;
      assert.equal(r.ok, true, JSON.stringify(r.error));
      assert.equal(r.summary.errors, 0);
    }
    assert.equal(byTarget(results, 'post', 'reused').summary.connectionsOpened, 1, 'a body does not cost the reuse');
    const logged = await nginx.accessLog();
    assert.equal(logged.length, 10, 'the first test: nothing else has asked nginx yet');
    assert.ok(logged.every((l) => l.request === 'POST /echo HTTP/1.1' && l.status === 200));
  });

  test('curl as the cold client sends the method and the body file as they are; its status is checked', async () => {
    const dir = tempDir('probefleet-body-');
    await writeFile(path.join(dir, 'body.json'), '{\n  "multi": "line"\n}\n');
    const plan = path.join(dir, 'plan.yaml');
    await writeFile(
      plan,
      `name: cold-post
targets:
  - { name: put, url: "${nginx.urls[0]}/echo", method: PUT, body: { file: body.json }, checks: { status: [200] } }
  - { name: error, url: "${nginx.urls[0]}/error" }
experiments: [{ probe: reuse, requests: 3, modes: [cold], client: curl }]
`,
    );
    const json = path.join(dir, 'run.json');
    const { code, stderr } = await runCli(['run', plan, '--json', json]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /: 1 of 2 jobs failed: 1 RESPONSE_CHECK_FAILED \(exit 1\)$/m);
    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    assert.equal(byTarget(report.results, 'put').ok, true, JSON.stringify(byTarget(report.results, 'put').error));
    assert.equal(byTarget(report.results, 'error').error?.code, 'RESPONSE_CHECK_FAILED');
    const puts = (await nginx.accessLog()).filter((l) => l.request.startsWith('PUT '));
    assert.equal(puts.length, 3);
    // The plan as run holds the body file's text, newlines and all, as curl sent it (21 bytes).
    assert.equal(report.plan.targets[0].body, '{\n  "multi": "line"\n}\n');
  });

  test('a 500, a login page and a missing header each fail their job with RESPONSE_CHECK_FAILED, in every report format', async () => {
    const dir = tempDir('probefleet-checks-');
    const plan = await writePlan(`
name: checks
targets:
  - { name: error, url: "${nginx.urls[0]}/error" }
  - { name: login, url: "${nginx.urls[0]}/login", checks: { bodyNotMatches: "log in" } }
  - { name: json, url: "${nginx.urls[0]}/json", checks: { headers: { content-type: "^application/json$", x-request-id: "." } } }
  - { name: good, url: "${nginx.urls[0]}/json", checks: { status: ["2xx"], bodyMatches: '"status":"ok"', headers: { content-type: json } } }
experiments: [{ probe: reuse, requests: 4, modes: [reused] }]
`);
    const files = Object.fromEntries(['json', 'markdown', 'csv', 'html'].map((f) => [f, path.join(dir, `run.${f}`)]));
    const { code, stdout, stderr } = await runCli([
      'run',
      plan,
      ...Object.entries(files).map(([format, file]) => `--${format}=${file}`),
    ]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /: 3 of 4 jobs failed: 3 RESPONSE_CHECK_FAILED \(exit 1\)$/m);
    const report = runReportSchema.parse(JSON.parse(await readFile(files.json, 'utf8'))) as RunReport;
    const messages = Object.fromEntries(report.results.map((r) => [r.target, r.error?.message]));
    assert.deepEqual(messages, {
      error: 'stopped after 3 failed requests in a row: response check failed: status 500, not 2xx',
      login:
        'stopped after 3 failed requests in a row: response check failed: the body matches /log in/, which it must not',
      json: 'stopped after 3 failed requests in a row: response check failed: no x-request-id header (the check wants /./)',
      good: undefined,
    });
    // In the run's metrics, as blackbox_exporter's probe_success: 0 for a target whose check failed.
    const [group] = runMetricsOf(report);
    const success = (await group.registry.getMetricsAsJSON()).find((m) => m.name === 'probefleet_probe_success')!;
    assert.deepEqual(Object.fromEntries(success.values.map((v) => [v.labels.target, v.value])), {
      error: 0,
      login: 0,
      json: 0,
      good: 1,
    });
    // A response that failed its check is an error sample: counted, and out of the timings.
    const error = byTarget(report.results, 'error');
    assert.equal(error.summary.errors, 3, 'three in a row stop the job, as for any failure');
    assert.equal(error.summary.phases.total, undefined);
    for (const [format, text] of [
      ['terminal', stdout],
      ...(await Promise.all(['markdown', 'csv', 'html'].map(async (f) => [f, await readFile(files[f], 'utf8')]))),
    ] as [string, string][]) {
      assert.ok((text.match(/RESPONSE_CHECK_FAILED/g)?.length ?? 0) >= 3, `${format}: each failed job's code\n${text}`);
    }
  });

  test('under load, a status outside the checked classes fails the job; the method and body are sent', async () => {
    const postsBefore = (await nginx.accessLog()).filter((l) => l.request === 'POST /echo HTTP/1.1').length;
    const results = await run(`
name: load-checks
targets:
  - { name: error, url: "${nginx.urls[0]}/error" }
  - { name: post, url: "${nginx.urls[0]}/echo", method: POST, body: "x=1", checks: { status: ["2xx", "3xx"] } }
experiments: [{ probe: load, modes: [reused], connections: 2, requests: 20, durationSeconds: 10 }]
`);
    const error = byTarget(results, 'error') as ResultOf<'load'>;
    assert.equal(error.error?.code, 'RESPONSE_CHECK_FAILED');
    assert.match(
      error.error!.message,
      /^response check failed: 20 of 20 responses had a status of 5xx \(20\), not 2xx$/,
    );
    const post = byTarget(results, 'post') as ResultOf<'load'>;
    assert.equal(post.ok, true, JSON.stringify(post.error));
    assert.equal(post.details?.completed, 20);
    const posts = (await nginx.accessLog()).filter((l) => l.request === 'POST /echo HTTP/1.1');
    assert.equal(posts.length - postsBefore, 20);
  });
});

describe('the http2 probe sends the method and body on both protocols, and checks each status', needsNginx, () => {
  let nginx: Nginx;
  before(async () => {
    const ca = await createLabCa();
    nginx = await startNginx([
      { files: {}, directives: NGINX_LOCATIONS, tls: { ...(await ca.issue({ hosts: ['127.0.0.1'] })), http2: true } },
    ]);
  });
  after(() => nginx?.stop());

  test('a POST over HTTP/2 and HTTP/1.1 reaches nginx; a 500 fails the job with RESPONSE_CHECK_FAILED', async () => {
    const results = await run(`
name: h2-post
targets:
  - { name: post, url: "${nginx.urls[0]}/echo", method: POST, body: "a=1", tls: { insecure: true }, checks: { status: [200] } }
  - { name: error, url: "${nginx.urls[0]}/error", tls: { insecure: true } }
experiments: [{ probe: http2, repeats: 2, concurrent: 4 }]
`);
    const post = byTarget(results, 'post') as ResultOf<'http2'>;
    assert.equal(post.ok, true, JSON.stringify(post.error));
    assert.equal(post.details?.alpn?.selected, 'h2');
    const requests = (await nginx.accessLog()).map((l) => l.request);
    assert.ok(requests.filter((r) => r === 'POST /echo HTTP/2.0').length >= 3 + 4, requests.join('\n'));
    assert.ok(requests.includes('POST /echo HTTP/1.1'), 'the hand-written HTTP/1.1 request too');
    const error = byTarget(results, 'error');
    assert.equal(error.error?.code, 'RESPONSE_CHECK_FAILED');
    assert.match(error.error!.message, /status 500, not 2xx/);
  });
});

describe("Python's http.server: a method it does not serve", needsPython, () => {
  let server: { url: string; process: ChildProcess };
  before(async () => {
    const dir = tempDir('probefleet-python-');
    await writeFile(path.join(dir, 'health.json'), '{"ok":true}');
    server = await startPythonServer(dir);
  });
  after(() => server?.process.kill());

  test('POST is answered 501: the job fails its status check; GET of the file passes', async () => {
    const results = await run(`
name: python-post
targets:
  - { name: post, url: "${server.url}/health.json", method: POST, body: "{}" }
  - { name: get, url: "${server.url}/health.json", checks: { bodyMatches: '"ok":true' } }
experiments: [{ probe: reuse, requests: 2, modes: [reused] }]
`);
    const post = byTarget(results, 'post');
    assert.equal(post.error?.code, 'RESPONSE_CHECK_FAILED');
    assert.match(post.error!.message, /status 501, not 2xx/);
    assert.equal(byTarget(results, 'get').ok, true, JSON.stringify(byTarget(results, 'get').error));
  });
});

describe('checks through real worker processes on Redis', needsRedis, () => {
  const prefix = testPrefix();
  let lab: Lab;
  let worker: CliProcess;
  before(async () => {
    requireRedis();
    lab = await startLab({ log });
    worker = await startWorkerProcess('a', TEST_REDIS_URL, prefix);
  });
  after(async () => {
    await worker?.stop();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test('a job carries the method, body and checks; a failed check fails the run with its code', async () => {
    const plan = await writePlan(`
name: checks-fleet
regions: [a]
targets:
  - { name: missing, url: "${lab.url('keepalive')}/no-such-page" }
  - { name: wrong, url: "${lab.url('keepalive')}", method: POST, body: "a=1", checks: { bodyMatches: "never in the lab's body" } }
  - { name: fine, url: "${lab.url('keepalive')}" }
experiments: [{ probe: reuse, requests: 2, modes: [reused] }]
`);
    const json = path.join(tempDir('probefleet-checks-'), 'run.json');
    const { code, stderr } = await runCli(
      ['run', plan, '--redis', TEST_REDIS_URL, '--prefix', prefix, '--json', json],
      {
        timeoutMs: 60_000,
      },
    );
    assert.equal(code, 1, stderr);
    assert.match(stderr, /: 2 of 3 jobs failed: 2 RESPONSE_CHECK_FAILED \(exit 1\)$/m);
    const report = runReportSchema.parse(JSON.parse(await readFile(json, 'utf8'))) as RunReport;
    assert.match(byTarget(report.results, 'missing').error!.message, /status 404, not 2xx/);
    assert.match(byTarget(report.results, 'wrong').error!.message, /does not match \/never in the lab's body\//);
    assert.equal(byTarget(report.results, 'fine').ok, true);
    assert.equal(byTarget(report.results, 'wrong').worker.region, 'a');
  });
});
