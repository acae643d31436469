// The cors probe against the lab: the HTTP performance lecture's api.php (docs/probes.md#sources;
// correct), one endpoint per CORS mistake, and the server's own request log as the witness that a
// refused origin's GET ran.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { request } from 'undici';
import { createLogger } from '../../common/log.js';
import type { ResultOf } from '../../contracts/result.js';
import type { LoggedRequest } from '../../lab/cors-routes.js';
import { corsView } from '../../coordinator/report/views/cors.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { labForThisFile } from '../helpers/lab.js';

const log = createLogger('test', 'silent');
const lab = labForThisFile();

async function cors(path: string, options: Record<string, unknown> = {}): Promise<ResultOf<'cors'>> {
  const experiment = {
    probe: 'cors',
    allowedOrigins: ['https://app.example'],
    method: 'PUT',
    requestHeaders: ['content-type'],
    ...options,
  };
  const [job] = await jobsOf(
    JSON.stringify({
      name: 'cors-test',
      targets: [{ name: 't', url: lab.url('keepalive', path) }],
      experiments: [experiment],
    }),
  );
  const result = (await executeJob(job, { region: 'local', log })) as ResultOf<'cors'>;
  assert.equal(result.ok, true, JSON.stringify(result.error));
  return result;
}

const codes = (result: ResultOf<'cors'>) => result.findings.map((f) => f.code).sort();

describe('cors probe', () => {
  test("the lecture's api.php allows its origin's PUT preflight and gives no misconfiguration finding", async () => {
    const result = await cors('/api/products');
    assert.deepEqual(codes(result), []);
    const [allowed, random] = result.details!.origins;
    assert.equal(allowed.role, 'allowed');
    assert.equal(allowed.preflight.status, 204);
    assert.equal(allowed.preflight.allowOrigin, 'https://app.example');
    assert.equal(allowed.preflight.maxAge, '600');
    assert.deepEqual(allowed.verdict, {
      preflightAllowsOrigin: true,
      methodAllowed: true,
      headersMissing: [],
      getReadable: true,
    });
    assert.equal(random.role, 'random');
    assert.match(random.origin, /^https:\/\/probefleet-[0-9a-f]{8}\.example$/);
    assert.equal(random.preflight.allowOrigin, undefined);
    assert.equal(result.summary.connectionsOpened, 1, 'preflights and GETs share one kept-alive connection');
  });

  const faults: [string, Record<string, unknown>, string[]][] = [
    ['wildcard-credentials', {}, ['CORS_WILDCARD_WITH_CREDENTIALS']],
    // With credentials a browser refuses the wildcard, so the allowed origin is refused too.
    ['wildcard-credentials', { credentials: true }, ['CORS_ALLOWED_ORIGIN_REFUSED', 'CORS_WILDCARD_WITH_CREDENTIALS']],
    ['reflect-origin', { credentials: true }, ['CORS_REFLECTS_ANY_ORIGIN']],
    ['no-vary', { credentials: true }, ['CORS_MISSING_VARY_ORIGIN']],
    ['narrow-preflight', { credentials: true }, ['CORS_PREFLIGHT_MISSING_HEADER', 'CORS_PREFLIGHT_MISSING_METHOD']],
  ];
  for (const [fault, options, expected] of faults) {
    test(`fault ${fault}${options.credentials ? ' (with credentials)' : ''} gives ${expected.join(' and ')}`, async () => {
      const result = await cors(`/cors/misconfigured?fault=${fault}`, options);
      assert.deepEqual(codes(result), expected, result.findings.map((f) => f.evidence).join('\n'));
    });
  }

  test('with credentials, an echoed origin without Allow-Credentials is told to send it, not to fix the allowlist', async () => {
    const result = await cors('/api/products', { credentials: true });
    assert.deepEqual(codes(result), ['CORS_CREDENTIALS_NOT_ALLOWED']);
    assert.match(
      result.findings[0].evidence,
      /^the preflight from https:\/\/app\.example answered Access-Control-Allow-Origin: https:\/\/app\.example with Access-Control-Allow-Credentials: none/,
    );
  });

  test("the report names each experiment's method and headers on its own rows", async () => {
    const put = await cors('/api/products');
    const post = await cors('/api/products', { method: 'POST', requestHeaders: ['authorization'] });
    const { blocks } = corsView([put, { ...post, target: 'u' }]);
    const block = blocks[0];
    assert.ok(block.kind === 'table');
    const { table } = block;
    const asks = table.rows.map((row) => `${row[1]} ${row[2]}`);
    assert.ok(asks.includes('t PUT + content-type'), asks.join('\n'));
    assert.ok(asks.includes('u POST + authorization'), asks.join('\n'));
    assert.doesNotMatch(block.title, /PUT|POST/);
  });

  test('the narrow preflight says which method and header are missing', async () => {
    const result = await cors('/cors/misconfigured?fault=narrow-preflight', {
      requestHeaders: ['content-type', 'authorization'],
    });
    const allowed = result.details!.origins[0];
    assert.equal(allowed.verdict.methodAllowed, false);
    assert.deepEqual(allowed.verdict.headersMissing, ['content-type'], 'authorization is allowed, content-type is not');
    // A safelisted method needs no permission.
    const post = await cors('/cors/misconfigured?fault=narrow-preflight', { method: 'POST', requestHeaders: [] });
    assert.deepEqual(codes(post), []);
  });

  test("the refused origin's GET is answered in full and shown to have run on the server", async () => {
    const result = await cors('/api/products', {
      refusedOrigins: ['https://evil.example'],
      serverLogPath: '/api/requests',
    });
    assert.deepEqual(codes(result), ['CORS_REFUSED_ORIGIN_STILL_SERVED']);
    const evil = result.details!.origins.find((o) => o.role === 'refused')!;
    assert.equal(evil.origin, 'https://evil.example');
    assert.equal(evil.preflight.allowOrigin, undefined, 'the preflight refused it');
    assert.equal(evil.get.status, 200);
    assert.equal(evil.get.bodyBytes, 179_500, 'the full body');
    assert.equal(evil.verdict.getReadable, false, 'a browser would hide it from the page');
    assert.equal(evil.get.ranOnServer, true);
    assert.equal(result.findings[0].data.ranOnServer, true);
    assert.equal(result.details!.serverLog?.status, 200);

    // The witness, read directly: the server logged the GET (not the preflight) with the probe's id and origin.
    const logged = (await (await request(lab.url('keepalive', '/api/requests'))).body.json()) as {
      requests: LoggedRequest[];
    };
    const entries = logged.requests.filter((r) => r.requestId === evil.get.requestId);
    assert.deepEqual(
      entries.map((r) => [r.method, r.path, r.origin]),
      [['GET', '/api/products', 'https://evil.example']],
    );
    assert.equal(
      logged.requests.filter((r) => r.method === 'OPTIONS').length,
      0,
      'preflights never reach the logging code',
    );
  });

  test('without a log to read, the GET is still reported served, with no claim about the log', async () => {
    const result = await cors('/api/products', { refusedOrigins: ['https://evil.example'] });
    assert.deepEqual(codes(result), ['CORS_REFUSED_ORIGIN_STILL_SERVED']);
    assert.equal(result.details!.serverLog, null);
    assert.equal(result.details!.origins.find((o) => o.role === 'refused')!.get.ranOnServer, undefined);
  });

  test('an unreachable target is an error with a code, not a crash', async () => {
    const [job] = await jobsOf(`
name: cors-refused
targets: [{ name: gone, url: "http://127.0.0.1:9/api" }]
experiments: [{ probe: cors, allowedOrigins: [https://app.example] }]
`);
    const result = await executeJob(job, { region: 'local', log });
    assert.equal(result.ok, false);
    assert.equal(result.error?.code, 'CONNECTION_REFUSED');
    assert.deepEqual(result.findings, []);
  });
});
