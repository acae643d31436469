// Per-job caps and secret references in plans: refused at validation with file, line, column and
// field (exit 2), and refused again by the worker when a job in Redis asks for more.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JOB_LIMITS } from '../../contracts/limits.js';
import { headerValueProblem } from '../../contracts/secrets.js';
import { InvalidJobError, parseJobPayload } from '../../worker/execute-job.js';
import { SecretNotSetError, withSecrets } from '../../worker/secrets.js';
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
});
