// The example plans reproduce their articles' tables against the lab (on free ports: see
// test/helpers/example-runs.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ProbeResult, ResultOf, RunReport } from '../../contracts/result.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { runExamplePlan } from '../helpers/example-runs.js';
import { labForThisFile } from '../helpers/lab.js';

const lab = labForThisFile();

/** Runs an example plan against this test's lab, the way `probefleet run --lab` runs it against the fixed ports. */
async function runExample(file: string): Promise<{ report: RunReport; text: string }> {
  const report = await runExamplePlan(lab, file);
  return { report, text: renderRunReport(report) };
}

function only<K extends ProbeResult['probe']>(report: RunReport, probe: K, target: string, mode?: string): ResultOf<K> {
  const found = report.results.filter(
    (r) => r.probe === probe && r.target === target && (!mode || (r.variant as { mode?: string }).mode === mode),
  );
  assert.equal(found.length, 1, `${probe} ${target} ${mode ?? ''}`);
  return found[0] as ResultOf<K>;
}

describe('example plans against the lab', () => {
  test("go-drain.yaml: the article's 100 GETs, 100 connections unread before Go 1.27 vs 1 drained", async () => {
    const { report, text } = await runExample('go-drain.yaml');
    assert.ok(
      report.results.every((r) => r.ok),
      JSON.stringify(report.results.filter((r) => !r.ok).map((r) => r.error)),
    );
    const conns = (target: string, mode: string, client: string) => {
      const found = report.results.filter(
        (r): r is ResultOf<'drain'> =>
          r.probe === 'drain' &&
          r.target === target &&
          (r as ResultOf<'drain'>).variant.mode === mode &&
          (r as ResultOf<'drain'>).variant.client === client,
      );
      assert.equal(found.length, 1, `${target} ${mode} ${client}`);
      return found[0].summary.connectionsOpened;
    };
    // The article's small body: only Go before 1.27 pays, and the workaround saves it.
    for (const client of ['go-before-1.27', 'go-1.27', 'undici']) {
      assert.equal(conns('body-1k', 'full', client), 1, client);
      assert.equal(conns('body-1k', 'drain', client), 1, client);
    }
    assert.equal(conns('body-1k', 'unread', 'go-before-1.27'), 100);
    assert.equal(conns('body-1k', 'unread', 'go-1.27'), 1, 'the kilobyte is there already: nothing to wait for');
    assert.equal(conns('body-1k', 'unread', 'undici'), 1);
    // Above undici's buffer; Go 1.27's drain of 200 KB may pass 50 ms on a busy machine.
    assert.equal(conns('body-200k', 'unread', 'go-before-1.27'), 100);
    assert.equal(conns('body-200k', 'unread', 'undici'), 100);
    assert.ok(conns('body-200k', 'unread', 'go-1.27') <= 3, `${conns('body-200k', 'unread', 'go-1.27')} connections`);
    // The newline trails the JSON by 10 ms; a client process stalled longer than that (a busy
    // machine) reads both at once and keeps its connection: hence "about" 100 and 1.
    for (const client of ['go-before-1.27', 'undici'])
      assert.ok(conns('json-newline', 'json', client) >= 90, `${client}: ${conns('json-newline', 'json', client)}`);
    assert.ok(conns('json-newline', 'json', 'go-1.27') <= 3, `go-1.27: ${conns('json-newline', 'json', 'go-1.27')}`);
    assert.equal(conns('trickle', 'unread', 'go-1.27'), 20);
    assert.equal(conns('close', 'unread', 'go-1.27'), 20);
    assert.deepEqual(report.findings.map((f) => `${f.code} ${f.target} ${f.data.client}`).sort(), [
      'UNREAD_BODY_BREAKS_REUSE body-1k go-before-1.27',
      'UNREAD_BODY_BREAKS_REUSE body-200k go-before-1.27',
      'UNREAD_BODY_BREAKS_REUSE body-200k undici',
      'UNREAD_BODY_BREAKS_REUSE json-newline go-before-1.27',
      'UNREAD_BODY_BREAKS_REUSE json-newline undici',
      'UNREAD_BODY_BREAKS_REUSE trickle go-1.27',
    ]);
    assert.match(text, /Drain: sequential HTTP\/1\.1 requests/);
    assert.match(text, /local\s+body-1k\s+unread\s+go-before-1\.27\s+100\s+100\s+99\s/);
    assert.match(text, /Decision table[\s\S]*body-1k from local: go-before-1\.27: 100 requests/);
  });

  test("lecture-compression-cors.yaml: the lecture's gzip table, its mistakes, and the CORS section", async () => {
    const { report, text } = await runExample('lecture-compression-cors.yaml');
    assert.ok(
      report.results.every((r) => r.ok),
      JSON.stringify(report.results.filter((r) => !r.ok).map((r) => r.error)),
    );

    const api = only(report, 'compression', 'api');
    const gzip = api.details!.levelTable!.rows.filter((r) => r.coding === 'gzip');
    assert.equal(api.details!.levelTable!.inputBytes, 179_500);
    assert.ok(gzip[0].bytes > gzip[1].bytes && gzip[1].bytes > gzip[2].bytes);
    assert.deepEqual(
      api.details!.serverGzip!.matches.map((m) => `${m.library} ${m.level}`),
      ['node 6'],
    );

    const byTarget = (code: string) =>
      report.findings
        .filter((f) => f.code === code)
        .map((f) => f.target)
        .sort();
    assert.deepEqual(byTarget('COMPRESSES_TINY_RESPONSE'), ['tiny']);
    assert.deepEqual(byTarget('COMPRESSES_INCOMPRESSIBLE'), ['random']);
    assert.deepEqual(byTarget('NO_COMPRESSION_FOR_TEXT'), ['uncompressed']);
    assert.deepEqual(byTarget('COMPRESSION_WITHOUT_VARY'), ['no-vary']);
    assert.deepEqual(byTarget('CORS_WILDCARD_WITH_CREDENTIALS'), ['cors-wildcard']);
    assert.deepEqual(byTarget('CORS_REFLECTS_ANY_ORIGIN'), ['cors-reflect']);
    assert.deepEqual(byTarget('CORS_MISSING_VARY_ORIGIN'), ['cors-no-vary']);
    assert.deepEqual(byTarget('CORS_PREFLIGHT_MISSING_METHOD'), ['cors-narrow']);
    assert.deepEqual(byTarget('CORS_PREFLIGHT_MISSING_HEADER'), ['cors-narrow']);
    assert.deepEqual(byTarget('CORS_REFUSED_ORIGIN_STILL_SERVED'), ['api']);
    assert.equal(report.findings.find((f) => f.code === 'CORS_REFUSED_ORIGIN_STILL_SERVED')?.data.ranOnServer, true);
    assert.ok(
      report.decisions.some((d) => d.situation.startsWith('Text over 1 KB') && d.evidence.includes('api from local')),
    );

    assert.match(text, /Level table for api \(local\): what each level would give, 179,500 B of application\/json/);
    assert.match(text, /the server's own gzip: level 6 of Node's zlib \(20,401 B, exact size\)/);
    assert.match(text, /Level table for tiny \(local\).*\n(.*\n)*? {2}the server's own gzip: any level/);
    assert.match(text, /Raw gzip: asked for gzip, .* sent bodies starting 1f 8b/);
    assert.match(text, /local\s+api\s+PUT \+ content-type\s+refused\s+https:\/\/evil\.example\s+204\s+-/);
  });
});
