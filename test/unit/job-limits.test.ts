// Per-job caps and secret references in plans: refused at validation with file, line, column and
// field (exit 2), and refused again by the worker when a job in Redis asks for more.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JOB_LIMITS } from '../../contracts/limits.js';
import { planAsRunSchema } from '../../contracts/plan.js';
import { RUN_SCHEMA, runReportSchema } from '../../contracts/result.js';
import { RUN_JOB_SCHEMA, runJobDataSchema } from '../../contracts/run-job.js';
import { jobTargetSchema } from '../../contracts/job.js';
import { headerValueProblem, redactUrl } from '../../contracts/secrets.js';
import { buildRunReport, redactPlan } from '../../coordinator/run-report.js';
import { InvalidJobError, parseJobPayload } from '../../worker/execute-job.js';
import { SecretInvalidError, SecretNotSetError, withSecrets } from '../../worker/secrets.js';
import { jobsOf, writePlan } from '../helpers/plans.js';
import { runCli } from '../helpers/repo.js';

const header = (lines: string) => `name: caps
jobTimeoutSeconds: 60
targets:
  - name: api
    url: "https://api.example/"
${lines}`;

/** [what, plan text, the line `plan validate` prints after the file name] */
const REFUSED: [string, string, string][] = [
  [
    'concurrency: connections x streams',
    header('experiments:\n  - { probe: load, modes: [h2], connections: 1000, streams: 1000 }\n'),
    '7:61: experiments[0].streams: over the per-job cap on concurrency (10000): 1000 connections x 1000 streams = 1000000',
  ],
  [
    "requests: an open loop's rate x duration",
    header('experiments:\n  - { probe: load, rate: 100000, durationSeconds: 600 }\n'),
    '7:26: experiments[0].rate: over the per-job cap on requests (10000000): 100000 requests/s x 600 s = 60000000',
  ],
  [
    'duration: jobTimeoutSeconds',
    header('experiments: [{ probe: reuse }]\n').replace('jobTimeoutSeconds: 60', 'jobTimeoutSeconds: 7200'),
    '2:20: jobTimeoutSeconds: over the per-job cap on durationSeconds (3600): 7200 s',
  ],
  [
    'a credential header given in clear',
    header('    headers: { Authorization: "Bearer abc123" }\nexperiments: [{ probe: reuse }]\n'),
    '6:31: targets[0].headers.Authorization: Authorization carries credentials: give its value as ${env:NAME} (e.g. "Bearer ${env:API_TOKEN}"), set on the workers, so the secret never travels in jobs or sits in Redis',
  ],
  [
    'a "${" that is not a reference',
    header('    headers: { x-tenant: "${TENANT}" }\nexperiments: [{ probe: reuse }]\n'),
    '6:26: targets[0].headers.x-tenant: "${TENANT}" holds a "${" that is not a reference: write ${env:NAME}',
  ],
];

describe('per-job caps and secrets in plans', () => {
  for (const [what, text, line] of REFUSED) {
    test(`refused at validation: ${what}`, async () => {
      const file = await writePlan(text);
      const { code, stdout, stderr } = await runCli(['plan', 'validate', file]);
      assert.equal(code, 2);
      assert.equal(stdout, '');
      assert.equal(stderr, `${file}:${line}\n`);
    });
  }

  test('within the caps, and credentials as references: valid', async () => {
    const jobs = await jobsOf(
      header(`    headers: { authorization: "Bearer \${env:API_TOKEN}", cookie: "\${env:SESSION}", accept: "*/*" }
experiments:
  - { probe: load, modes: [h2], connections: 100, streams: 100, rate: 1000, durationSeconds: 600 }
`),
    );
    // The job carries the reference, never a value.
    assert.deepEqual(jobs[0].target.headers, {
      authorization: 'Bearer ${env:API_TOKEN}',
      cookie: '${env:SESSION}',
      accept: '*/*',
    });
    assert.equal(headerValueProblem('X-Api-Key', '${env:KEY}'), undefined);
    assert.match(headerValueProblem('X-Api-Key', 'abc')!, /carries credentials/);
  });

  test('the worker refuses a job whose parameters together exceed a cap (an edited job in Redis)', async () => {
    const [job] = await jobsOf(
      header('experiments:\n  - { probe: load, modes: [h2], connections: 100, streams: 100 }\n'),
    );
    assert.equal(parseJobPayload(job).jobId, job.jobId);
    const edited = { ...job, params: { ...job.params, connections: 1000, streams: 1000 } };
    assert.throws(
      () => parseJobPayload(edited),
      (err: Error) =>
        err instanceof InvalidJobError &&
        /params\.streams: over the per-job cap on concurrency \(10000\)/.test(err.message),
    );
    assert.throws(
      () => parseJobPayload({ ...job, timeLimitMs: (JOB_LIMITS.durationSeconds + 1) * 1000 }),
      /timeLimitMs/,
    );
  });

  test("references are filled in from the worker's environment; a missing variable is named", () => {
    const target = { name: 'api', url: 'http://x/', headers: { authorization: 'Bearer ${env:PF_T}', accept: '*/*' } };
    assert.deepEqual(withSecrets(target, { PF_T: 's3cret' }).headers, {
      authorization: 'Bearer s3cret',
      accept: '*/*',
    });
    assert.throws(
      () => withSecrets(target, {}),
      (err: Error) =>
        err instanceof SecretNotSetError &&
        err.message === 'header authorization refers to ${env:PF_T}, which is not set on this worker',
    );
  });

  test('a variable whose value cannot be sent in a header (CR LF, control, beyond Latin-1): SECRET_INVALID, value not quoted', () => {
    const target = { name: 'api', url: 'http://x/', headers: { 'x-tenant': 'acme-${env:PF_T}' } };
    for (const [value, says] of [
      [
        'a\r\nX-Injected: yes',
        'holds a carriage return (U+000D) at character 2, which would end the header and start another',
      ],
      ['a\nb', 'holds a line feed (U+000A) at character 2'],
      ['\x00', 'holds a NUL (U+0000) at character 1'],
      ['\x1b[31m', 'holds a control character (U+001B) at character 1'],
      ['\u010aX-Injected: yes', 'holds U+010A at character 1, beyond Latin-1'],
    ] as const) {
      assert.throws(
        () => withSecrets(target, { PF_T: value }),
        (err: Error) =>
          err instanceof SecretInvalidError &&
          err.code === 'SECRET_INVALID' &&
          err.message.startsWith(`header x-tenant: the value of \${env:PF_T} ${says}`) &&
          err.message.endsWith('; nothing was sent') &&
          !err.message.includes(value),
      );
    }
    // Latin-1 letters and tabs are sendable as they are.
    assert.equal(withSecrets(target, { PF_T: 'caf\u00e9\tx' }).headers!['x-tenant'], 'acme-caf\u00e9\tx');
  });

  test('references in a URL: user:password becomes Basic authentication, query values are percent-encoded', () => {
    const target = jobTargetSchema.parse({
      name: 'api',
      url: 'https://${env:PF_USER}:${env:PF_PASS}@api.example:8443/v1?token=${env:PF_TOKEN}&page=2',
      headers: { accept: '*/*' },
    });
    const sent = withSecrets(target, {
      PF_USER: 'robot',
      PF_PASS: 'p@ss:w/rd',
      PF_TOKEN: 'a&b=c#d\r\nX-Injected: yes',
    });
    assert.equal(sent.url, 'https://api.example:8443/v1?token=a%26b%3Dc%23d%0D%0AX-Injected%3A%20yes&page=2');
    assert.deepEqual(sent.headers, {
      accept: '*/*',
      authorization: `Basic ${Buffer.from('robot:p@ss:w/rd').toString('base64')}`,
    });
    assert.throws(() => withSecrets(target, { PF_USER: 'robot', PF_PASS: 'x' }), SecretNotSetError);
    assert.throws(
      () => withSecrets(target, { PF_USER: 'a:b', PF_PASS: 'x', PF_TOKEN: 't' }),
      (err: Error) => err instanceof SecretInvalidError && /user name holds a ":"/.test(err.message),
    );
    // A target without references or credentials is left as it is.
    const plain = { name: 'api', url: 'http://127.0.0.1:9' };
    assert.equal(withSecrets(plain, {}), plain);
  });

  test('URLs are shown and stored redacted: user:password, referenced and credential query values', () => {
    assert.equal(
      redactUrl('https://${env:U}:${env:P}@api.example/v1?token=${env:T}&page=2&sig=x#top'),
      'https://[redacted]@api.example/v1?token=[redacted]&page=2&sig=[redacted]#top',
    );
    assert.equal(redactUrl('http://127.0.0.1:18170/large?bytes=200000'), 'http://127.0.0.1:18170/large?bytes=200000');
    assert.equal(redactUrl('lab:keepalive/nagle?token=${env:T}&n=1'), 'lab:keepalive/nagle?token=[redacted]&n=1');
  });

  test('a run report and the runs queue hold the plan redacted, and read it back, an Authorization header included', () => {
    const plan = planAsRunSchema.parse({
      name: 'secrets',
      regions: ['eu-west'],
      targets: [
        {
          name: 'api',
          url: 'https://robot:${env:PF_PASS}@api.example/v1?api_key=${env:PF_KEY}&page=2',
          headers: { 'x-api-key': '${env:PF_KEY}', accept: '*/*' },
        },
        { name: 'web', url: 'https://web.example/', headers: { Authorization: 'Bearer ${env:PF_TOKEN}' } },
      ],
      experiments: [{ probe: 'reuse' }],
    });
    const shown = redactPlan(plan);
    assert.equal(shown.targets[0].url, 'https://[redacted]@api.example/v1?api_key=[redacted]&page=2');
    assert.deepEqual(shown.targets[1].headers, { Authorization: '[redacted]' });
    const now = new Date();
    const report = buildRunReport({
      runId: 'secrets-1',
      mode: 'distributed',
      plan,
      startedAt: now,
      finishedAt: now,
      results: [],
    });
    assert.equal(report.schema, RUN_SCHEMA);
    assert.deepEqual(runReportSchema.parse(JSON.parse(JSON.stringify(report))).plan, shown);
    const runJob = {
      schema: RUN_JOB_SCHEMA,
      runId: 'secrets-1',
      plan: shown,
      submittedAt: now.toISOString(),
      deadline: now.toISOString(),
      jobs: {
        regions: ['eu-west'],
        inEachRegion: [{ idTail: 'api.reuse', target: 'api', probe: 'reuse', variant: { mode: 'reused' } }],
      },
      jobsPerBatch: 1,
    };
    assert.equal(runJobDataSchema.safeParse(runJob).success, true);
    assert.ok(!JSON.stringify(report).includes('PF_'), 'not even the names of the variables');
  });

  test('plan expand --json shows the jobs with header values and URL credentials redacted', async () => {
    const file = await writePlan(
      header(
        '    headers: { authorization: "Bearer ${env:API_TOKEN}", accept: "*/*" }\nexperiments: [{ probe: reuse }]\n',
      ).replace('url: "https://api.example/"', 'url: "https://api.example/v1?token=${env:API_KEY}&page=2"'),
    );
    const { code, stdout, stderr } = await runCli(['plan', 'expand', '--json', file]);
    assert.equal(code, 0, stderr);
    const jobs = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.equal(jobs.length, 2);
    for (const job of jobs) {
      assert.equal(job.target.url, 'https://api.example/v1?token=[redacted]&page=2');
      assert.deepEqual(job.target.headers, { authorization: '[redacted]', accept: '[redacted]' });
    }
  });
});
