// The reuse probe against real loopback servers; connection counts are checked against
// what the lab server itself accepted. The Nagle finding and the new-connection cost judge times (a
// control request against the stalled ones, one median against another): those runs are measured
// at a real-time priority, the lab too (it answers in this process), so that other work on the
// machine cannot decide them (helpers/realtime.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ResultOf } from '../../contracts/result.js';
import { analyzeRun } from '../../coordinator/analysis.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { costChart } from '../../coordinator/report/run-views.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { createLogger } from '../../common/log.js';
import type { LabServerName } from '../../lab/index.js';
import { executeJob } from '../../worker/execute-job.js';
import { runAlone } from '../helpers/exclusive.js';
import { jobsOf } from '../helpers/plans.js';
import { labForThisFile } from '../helpers/lab.js';
import { atRealtimePriority } from '../helpers/realtime.js';

// Measures at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

const log = createLogger('test', 'silent');
const lab = labForThisFile();

async function runReuse(
  server: LabServerName,
  mode: 'reused' | 'new' | 'cold',
  requests: number,
  path = '/',
  name: string = server,
) {
  const [job] = await jobsOf(`
name: reuse-test
targets:
  - name: ${name}
    url: ${lab.url(server, path)}
${lab.servers[server].url.startsWith('https') ? '    tls: { insecure: true }' : ''}
experiments:
  - { probe: reuse, requests: ${requests}, modes: [${mode}] }
`);
  const acceptedBefore = lab.servers[server].connectionsAccepted();
  const result = (await executeJob(job, { region: 'local', log })) as ResultOf<'reuse'>;
  return { result, serverAccepted: lab.servers[server].connectionsAccepted() - acceptedBefore };
}

/** `runReuse` at a real-time priority (this process and its lab): for the results whose times are
 * judged. Under `stress-ng --cpu 2` at normal priority, one request in three or four is held up by
 * 10-40 ms, which makes the one control the Nagle finding has from a reused job (its first request)
 * as slow as the stalled requests. */
async function measured(...args: Parameters<typeof runReuse>): ReturnType<typeof runReuse> {
  return (await atRealtimePriority(() => runReuse(...args))).value;
}

describe('reuse probe', () => {
  test('reused mode: 200 requests over 1 connection, and the server agrees', async () => {
    const { result, serverAccepted } = await runReuse('keepalive', 'reused', 200);
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(result.summary.requests, 200);
    assert.equal(result.summary.connectionsOpened, 1);
    assert.equal(serverAccepted, 1);
    assert.equal(result.details?.samples.filter((s) => s.newConnection).length, 1);
    assert.deepEqual(result.findings, []);
  });

  test('new mode: 200 requests open 200 connections, and the server agrees', async () => {
    const { result, serverAccepted } = await runReuse('keepalive', 'new', 200);
    assert.equal(result.ok, true);
    assert.equal(result.summary.connectionsOpened, 200);
    assert.equal(serverAccepted, 200);
    assert.ok(result.details?.samples.every((s) => s.newConnection && s.phases.connect! > 0));
  });

  test('against the always-close server, reused mode opens 200 and says why', async () => {
    const { result, serverAccepted } = await runReuse('close', 'reused', 200);
    assert.equal(result.summary.connectionsOpened, 200);
    assert.equal(serverAccepted, 200);
    assert.deepEqual(
      result.findings.map((f) => [f.code, f.data.connectionsOpened, f.data.responsesWithClose]),
      [['SERVER_CLOSES_EVERY_CONNECTION', 200, 200]],
    );
  });

  test('HTTPS: new mode has a TLS phase on every request, reused mode on the first only', async () => {
    const fresh = (await runReuse('https', 'new', 30)).result;
    assert.equal(fresh.ok, true, JSON.stringify(fresh.error));
    assert.ok(
      fresh.details?.samples.every((s) => s.phases.tls! > 0),
      'every new connection did a handshake',
    );

    const reused = (await runReuse('https', 'reused', 30)).result;
    const tls = reused.details!.samples.map((s) => s.phases.tls);
    assert.ok(tls[0]! > 0, 'the first request paid the handshake');
    assert.deepEqual(tls.slice(1), Array(29).fill(0));
    assert.equal(reused.summary.connectionsOpened, 1);
  });

  test('cold mode: one process and one connection per request, slower than reused', async () => {
    const cold = (await runReuse('keepalive', 'cold', 5)).result;
    assert.equal(cold.ok, true, JSON.stringify(cold.error));
    assert.equal(cold.summary.connectionsOpened, 5);
    const reused = (await runReuse('keepalive', 'reused', 5)).result;
    assert.ok(cold.summary.phases.total!.p50 > reused.summary.phases.total!.p50);
  });

  test('the Nagle endpoint is flagged NAGLE_DELAYED_ACK_STALL; the normal endpoint is not', async () => {
    const analyse = async (path: string) => {
      const reused = (await measured('keepalive', 'reused', 20, path)).result;
      const fresh = (await measured('keepalive', 'new', 20, path)).result;
      return analyzeRun([reused, fresh]);
    };
    const nagle = await analyse('/nagle');
    assert.deepEqual(
      nagle.findings.map((f) => f.code),
      ['NAGLE_DELAYED_ACK_STALL'],
    );
    assert.ok((nagle.findings[0].data.reusedMedianMs as number) > 30);
    const normal = await analyse('/');
    assert.deepEqual(normal.findings, []);
    assert.equal(normal.comparisons.length, 1);
  });

  test('the Nagle stall is found from the reused requests alone (modes: [reused])', async () => {
    const reused = (await measured('keepalive', 'reused', 12, '/nagle')).result;
    const { findings } = analyzeRun([reused]);
    assert.deepEqual(
      findings.map((f) => f.code),
      ['NAGLE_DELAYED_ACK_STALL'],
    );
    assert.match(findings[0].evidence, /for the first request \(a fresh connection\): the body waits/);
    assert.equal(findings[0].data.newMedianMs, undefined, 'no new mode ran');
    const normal = (await measured('keepalive', 'reused', 12, '/')).result;
    assert.deepEqual(analyzeRun([normal]).findings, []);
  });

  test('no negative number is printed as a cost, and a server closing every connection is left out of the keep-alive row', async () => {
    const results = [
      (await measured('keepalive', 'reused', 20, '/', 'normal')).result,
      (await measured('keepalive', 'new', 20, '/', 'normal')).result,
      (await measured('keepalive', 'reused', 20, '/nagle', 'nagle')).result,
      (await measured('keepalive', 'new', 20, '/nagle', 'nagle')).result,
      (await measured('close', 'reused', 12, '/', 'closing')).result,
      (await measured('close', 'new', 12, '/', 'closing')).result,
    ];
    const analysis = analyzeRun(results);
    const byTarget = Object.fromEntries(analysis.comparisons.map((c) => [c.target, c]));
    assert.equal(byTarget.normal.noCostReason, undefined);
    assert.ok(byTarget.nagle.newConnectionCostMs.median < 0, 'the difference is kept in the JSON');
    assert.match(
      byTarget.nagle.noCostReason!,
      /^reused requests were the slower ones .*: they stall \(NAGLE_DELAYED_ACK_STALL\)$/,
    );
    assert.match(
      byTarget.closing.noCostReason!,
      /the server closes every connection.*\(SERVER_CLOSES_EVERY_CONNECTION\)$/,
    );

    const row = analysis.decisions.find((d) => d.situation === 'A client makes many requests to the same host')!;
    assert.match(row.evidence, /^normal from local: \+\S+ ms per new connection \(95% CI /);
    assert.match(row.evidence, /; nagle from local left out: reused requests were the slower ones/);
    assert.match(row.evidence, /; closing from local left out: the server closes every connection/);
    assert.doesNotMatch(row.evidence, /(nagle|closing) from local: \+/);

    const report = buildRunReport({
      runId: 'no-cost-run',
      mode: 'embedded',
      plan: (
        await parsePlan(
          'name: x\ntargets: [{ name: t, url: "http://127.0.0.1:1/" }]\nexperiments: [{ probe: reuse }]\n',
          'x.yaml',
        )
      ).plan,
      startedAt: new Date(),
      finishedAt: new Date(),
      results,
    });
    const text = renderRunReport(report);
    const costLines = text.split('New-connection cost = ')[1].split('\n\n')[0];
    // The cost column only: its 95% CI beside it may well reach below 0 (a cost of 0.37 ms, CI -2.42 to 2.52 ms).
    const [headers, , ...rows] = costLines
      .split('\n')
      .slice(1)
      .filter((line) => /^\s+(region|-+|local)\s/.test(line))
      .map((line) => line.trim().split(/\s{2,}/));
    const costColumn = headers!.indexOf('new-connection cost');
    assert.ok(costColumn > 0, costLines);
    const costs = rows.map((row) => row[costColumn]);
    assert.equal(costs.length, 3, costLines);
    assert.deepEqual(
      costs.filter((cost) => /-\s*\d/.test(cost!)),
      [],
      `no negative cost printed:\n${costLines}`,
    );
    assert.match(costLines, /nagle\s+http\s+\S+ ms\s+\S+ ms\s+none\s+-/);
    assert.match(costLines, /nagle \(local\): no new-connection cost to show: reused requests were the slower ones/);
    const chart = costChart(report);
    assert.deepEqual(
      chart.groups.map((g) => g.label),
      ['normal (http)'],
      'no bar for a target without a cost',
    );
  });

  test('tlsResume: each sample on a new connection says whether the server resumed its session', async () => {
    const [job] = await jobsOf(`
name: resume
targets: [{ name: https, url: "${lab.url('https')}", tls: { insecure: true } }]
experiments: [{ probe: reuse, requests: 4, modes: [new], tlsResume: true }]
`);
    const result = (await executeJob(job, { region: 'local', log })) as ResultOf<'reuse'>;
    const resumed = result.details!.samples.map((s) => s.tlsResumed);
    assert.equal(resumed[0], false, 'the first handshake has nothing to resume');
    assert.ok(
      resumed.slice(1).every((r) => typeof r === 'boolean'),
      JSON.stringify(resumed),
    );
    assert.ok(
      resumed.slice(1).some((r) => r),
      JSON.stringify(resumed),
    );
  });

  test('a refused connection is a result with a code, not a crash', async () => {
    const [job] = await jobsOf(`
name: refused
targets: [{ name: gone, url: "http://127.0.0.1:9/" }]
experiments: [{ probe: reuse, requests: 10, modes: [new] }]
`);
    const result = await executeJob(job, { region: 'local', log });
    assert.equal(result.ok, false);
    assert.equal(result.error?.code, 'CONNECTION_REFUSED');
    assert.equal(result.summary.requests, 3, 'stops after 3 failures in a row');
  });
});
