// `ipFamily: both` (coordinator/dual-stack.ts): the plan as run holds NAME-ipv4 and NAME-ipv6 in
// the target's place, and everything that names NAME (experiments, thresholds) covers both.
// Connecting over each family is in test/integration/target-dns.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withDualStackTargets } from '../../coordinator/dual-stack.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { checkThresholds } from '../../coordinator/thresholds.js';
import { jobsOf } from '../helpers/plans.js';
import { probeResult } from '../helpers/results.js';

const PLAN = `
name: dual
targets:
  - { name: api, url: "https://api.example/", ipFamily: both, tls: { insecure: true }, dns: { cache: warm } }
  - { name: web, url: "http://web.example/" }
experiments:
  - { probe: reuse, modes: [new], targets: [api] }
thresholds:
  - { quantity: error_rate, max: 0.1, targets: [api] }
`;

test('both: one target per family in the plan as run, each with its family and the name written', async () => {
  const { plan, tls } = await parsePlan(PLAN, 'dual.yaml');
  assert.deepEqual(
    plan.targets.map((t) => [t.name, t.ipFamily, t.dualStackOf]),
    [
      ['api-ipv4', 4, 'api'],
      ['api-ipv6', 6, 'api'],
      ['web', undefined, undefined],
    ],
  );
  assert.deepEqual(Object.keys(tls).sort(), ['api-ipv4', 'api-ipv6'], 'the TLS settings go to both');
  assert.deepEqual(plan.targets[0].dns, { server: 'system', cache: 'warm' });
  const again = withDualStackTargets(plan, tls);
  assert.deepEqual(again.plan, plan, 'a plan as run is made again unchanged (a schedule firing)');
});

test('an experiment naming the target runs on both families; the jobs carry the family', async () => {
  const jobs = await jobsOf(PLAN);
  assert.deepEqual(
    jobs.map((j) => [j.target.name, j.target.ipFamily, j.target.dualStackOf]),
    [
      ['api-ipv4', 4, 'api'],
      ['api-ipv6', 6, 'api'],
    ],
  );
});

test('a threshold naming the target checks both families', async () => {
  const { plan } = await parsePlan(PLAN, 'dual.yaml');
  const result = (target: string) =>
    probeResult({
      probe: 'reuse',
      target,
      variant: { mode: 'new', scheme: 'https' },
      summary: {
        requests: 10,
        errors: target === 'api-ipv6' ? 10 : 0,
        connectionsOpened: 10,
        durationMs: 1,
        phases: {},
      },
      details: { samples: [] },
    });
  const outcome = checkThresholds(plan, [result('api-ipv4'), result('api-ipv6'), result('web')]);
  assert.deepEqual(
    outcome.checks.map((c) => [c.target, c.breached]),
    [
      ['api-ipv4', false],
      ['api-ipv6', true],
    ],
  );
});
