import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { jobPayloadSchema } from '../../contracts/job.js';
import { runIdFor } from '../../coordinator/split.js';
import { jobsOf } from '../helpers/plans.js';

const PLAN = `
name: split
regions: [eu-west, ap-south]
targets:
  - name: api
    url: https://127.0.0.1:18172/
    tls: { insecure: true }
  - name: web
    url: http://127.0.0.1:18170/
experiments:
  - probe: reuse
    requests: 20
    modes: [reused, new, cold]
  - probe: reuse
    targets: [web]
    requests: 5
`;

describe('splitting a plan into jobs', () => {
  test('one job per region, target and variant, each a valid payload', async () => {
    const jobs = await jobsOf(PLAN);
    // 2 regions x (2 targets x 3 modes + 1 target x 2 default modes)
    assert.equal(jobs.length, 2 * (2 * 3 + 2));
    for (const job of jobs) assert.ok(jobPayloadSchema.safeParse(job).success, job.jobId);
    assert.deepEqual(new Set(jobs.map((j) => j.region)), new Set(['eu-west', 'ap-south']));
    const apiHttps = jobs.find((j) => j.target.name === 'api' && j.probe === 'reuse' && j.variant.mode === 'new');
    assert.deepEqual(apiHttps?.variant, { mode: 'new', scheme: 'https' });
    assert.deepEqual(apiHttps?.target.tls, { insecure: true });
  });

  test('ids are deterministic, unique, free of ":" and never integers', async () => {
    const first = (await jobsOf(PLAN, 'run-1')).map((j) => j.jobId);
    const second = (await jobsOf(PLAN, 'run-1')).map((j) => j.jobId);
    assert.deepEqual(first, second);
    assert.equal(new Set(first).size, first.length);
    for (const id of first) {
      assert.doesNotMatch(id, /:/);
      assert.doesNotMatch(id, /^\d+$/);
      assert.ok(id.startsWith('run-1.'));
    }
    const otherRun = (await jobsOf(PLAN, 'run-2')).map((j) => j.jobId);
    assert.equal(otherRun.filter((id) => first.includes(id)).length, 0);
  });

  test('different parameters give different ids; the same experiment twice is refused, not merged', async () => {
    const plan = (third: string) => `
name: twice
targets: [{ name: api, url: "http://127.0.0.1:1/" }]
experiments:
  - { probe: reuse, requests: 10, modes: [new] }
  - { probe: reuse, requests: 11, modes: [new] }
  - { probe: reuse, requests: ${third}, modes: [new] }
`;
    assert.equal((await jobsOf(plan('12'))).length, 3);
    await assert.rejects(jobsOf(plan('10')), /experiments\[2\]: repeats experiments\[0\] on target "api"/);
  });

  test('run ids are readable, sortable and valid in job ids', () => {
    assert.equal(runIdFor('nightly', new Date('2026-11-30T02:00:00.123Z')), 'nightly-20261130t020000z');
    assert.equal(runIdFor('nightly', new Date('2026-11-30T02:00:00Z'), 'ab12'), 'nightly-20261130t020000z-ab12');
  });
});
