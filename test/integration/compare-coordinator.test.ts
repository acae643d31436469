// The coordinator's comparisons on a real Redis: each run it finishes is compared with the
// previous stored run of the same plan (another plan's run in between is not that), the
// comparison is stored beside the report, its verdicts are pushed to a real Pushgateway, and
// `probefleet compare --redis` reads stored runs and comparisons. The third run switches the
// target to the lab's Nagle-stalled path: regressed. Coordinator and worker run in this process.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { comparisonSchema, type RunComparison } from '../../contracts/comparison.js';
import { createLogger } from '../../common/log.js';
import { startCoordinator, type RunningCoordinator } from '../../coordinator/coordinator-service.js';
import { openFleet, type Fleet } from '../../coordinator/fleet.js';
import { startLab, type Lab } from '../../lab/index.js';
import { startRegionWorker, type RegionWorker } from '../../worker/queue-worker.js';
import { EMBEDDED_POLICY_SETTINGS, TargetPolicy } from '../../worker/target-policy.js';
import { writePlan } from '../helpers/plans.js';
import {
  needsPrometheus,
  prometheusMissing,
  requirePrometheus,
  startPushgateway,
  type Pushgateway,
} from '../helpers/prometheus.js';
import { atRealtimePriority } from '../helpers/realtime.js';
import { deletePrefix, needsRedis, requireRedis, TEST_REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCli } from '../helpers/repo.js';
import { runAlone } from '../helpers/exclusive.js';

// Measures at a real-time priority: one such file at a time (helpers/exclusive.ts).
await runAlone('realtime');

const log = createLogger('test', 'silent');
const REGION = 'eu-west';

describe('the coordinator compares each run with the earlier runs of its plan', needsRedis, () => {
  const prefix = testPrefix();
  const redisArgs = ['--redis', TEST_REDIS_URL, '--prefix', prefix];
  let lab: Lab;
  let fleet: Fleet;
  let gateway: Pushgateway | undefined;
  let coordinator: RunningCoordinator;
  let worker: RegionWorker;
  const ids = { first: 'nightly-1', second: 'nightly-2', other: 'other-1', nagle: 'nightly-3' };
  const comparisons = new Map<string, RunComparison | undefined>();

  const planFor = (name: string, path: string, requests: number) => `
name: ${name}
regions: [${REGION}]
targets: [{ name: http, url: "${lab.url('keepalive', path)}" }]
experiments: [{ probe: reuse, requests: ${requests}, modes: [reused, new] }]
`;

  /** Submits a run as a schedule does (detached: the coordinator finishes it) and waits for its report and comparison step. */
  async function runAndWait(id: string, planText: string): Promise<void> {
    const submitted = await runCli(['run', await writePlan(planText), ...redisArgs, '--detach', '--run-id', id]);
    assert.equal(submitted.code, 0, submitted.stderr);
    const until = Date.now() + 120_000;
    while (!(await fleet.store.get(id))) {
      assert.ok(Date.now() < until, `no report for ${id}`);
      await sleep(100);
    }
    // The comparison is stored right after the report, in the same step of the coordinator.
    for (let i = 0; i < 50 && !(await fleet.store.getComparison(id)); i++) await sleep(100);
    comparisons.set(id, await fleet.store.getComparison(id));
  }

  before(async () => {
    requireRedis();
    lab = await startLab({ log });
    if (!prometheusMissing) gateway = await startPushgateway();
    fleet = openFleet({ redis: { url: TEST_REDIS_URL }, prefix, log });
    coordinator = await startCoordinator({
      fleet,
      log,
      listen: { host: '127.0.0.1', port: 0 },
      ...(gateway ? { pushgateway: { url: gateway.url } } : {}),
    });
    worker = startRegionWorker({
      redis: { url: TEST_REDIS_URL },
      prefix,
      region: REGION,
      concurrency: 1,
      log,
      targetPolicy: new TargetPolicy(EMBEDDED_POLICY_SETTINGS),
    });
    await worker.ready;
    // The measured part at a real-time priority (the worker runs in this process).
    await atRealtimePriority(async () => {
      await runAndWait(ids.first, planFor('nightly', '/', 100));
      await runAndWait(ids.second, planFor('nightly', '/', 100));
      await runAndWait(ids.other, planFor('other', '/', 10));
      await runAndWait(ids.nagle, planFor('nightly', '/nagle', 100));
    });
  });

  after(async () => {
    await worker?.close(5_000);
    await coordinator?.close();
    await fleet?.close();
    await gateway?.stop();
    await lab?.close();
    if (!needsRedis.skip) await deletePrefix(TEST_REDIS_URL, prefix);
  });

  test("a plan's first run has nothing to compare with; each later one with the earlier runs of the same plan", async () => {
    assert.equal(comparisons.get(ids.first), undefined);
    assert.equal(comparisons.get(ids.other), undefined, 'the first run of plan "other"');
    const second = comparisons.get(ids.second)!;
    assert.deepEqual([second.before.runId, second.after.runId], [ids.first, ids.second]);
    assert.deepEqual([second.before.source, second.after.source], ['redis', 'redis']);
    const nagle = comparisons.get(ids.nagle)!;
    assert.deepEqual([nagle.before.runId, nagle.after.runId], [ids.second, ids.nagle], 'not the other plan in between');
    assert.deepEqual(
      nagle.baseline.map((r) => r.runId),
      [ids.second, ids.first],
      'the baseline: every earlier run of the plan, newest first',
    );
    assert.ok(second.quantities.length > 10, `${second.quantities.length} quantities`);
    const first = await runCli(['compare', ...redisArgs, '--previous', ids.first]);
    assert.equal(first.code, 2);
    assert.match(first.stderr, /"nightly-1" is the first stored run of plan nightly: nothing to compare with/);
  });

  test('the switch to the Nagle-stalled path: reused requests regressed, the finding appeared', () => {
    const c = comparisons.get(ids.nagle)!;
    const total = c.quantities.find((q) => q.quantity === 'phase_total_p50' && q.variant.mode === 'reused')!;
    assert.equal(total.verdict, 'regressed', JSON.stringify(total));
    assert.ok(total.change > 30, `${total.change} ms`);
    assert.equal(c.quantities.find((q) => q.quantity === 'new_connection_cost')?.verdict, 'regressed');
    assert.deepEqual(
      c.findings.map((f) => [f.change, f.code]),
      [['appeared', 'NAGLE_DELAYED_ACK_STALL']],
    );
  });

  test('compare --redis: stored ids, --previous reads the stored comparison, --fail-on exits 3', async () => {
    const previous = await runCli([
      'compare',
      ...redisArgs,
      '--previous',
      ids.nagle,
      '--json=-',
      '--fail-on',
      'regression',
    ]);
    assert.equal(previous.code, 3, previous.stderr);
    assert.deepEqual(comparisonSchema.parse(JSON.parse(previous.stdout)), comparisons.get(ids.nagle));
    // No run named: the newest stored run, which is the Nagle one.
    const newest = await runCli(['compare', ...redisArgs, '--previous', '--json=-']);
    assert.equal(newest.code, 0, newest.stderr);
    assert.equal(JSON.parse(newest.stdout).after.runId, ids.nagle);
    // Stored runs by id, the new one last (computed now, the same way).
    const byIds = await runCli(['compare', ids.first, ids.second, ids.nagle, ...redisArgs, '--json=-']);
    assert.equal(byIds.code, 0, byIds.stderr);
    assert.deepEqual(JSON.parse(byIds.stdout), comparisons.get(ids.nagle));
    // --baseline makes a new comparison with that many earlier runs.
    const one = await runCli(['compare', ...redisArgs, '--previous', ids.nagle, '--baseline', '1', '--json=-']);
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(
      comparisonSchema.parse(JSON.parse(one.stdout)).baseline.map((r) => r.runId),
      [ids.second],
    );
    const missing = await runCli(['compare', ids.second, 'nightly-404', ...redisArgs]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no stored run "nightly-404"/);
  });

  test(
    'the verdicts reached the Pushgateway: one compare group per plan and region, regressed = 1 where it regressed',
    needsPrometheus,
    async () => {
      requirePrometheus();
      const groups = (await gateway!.groups()).filter((g) => g.labels.job === 'probefleet_compare');
      assert.deepEqual(
        groups.map((g) => g.labels),
        [{ job: 'probefleet_compare', plan: 'nightly', region: REGION }],
        'replaced by each comparison; the first run of "other" pushed none',
      );
      const text = await (await fetch(`${gateway!.url}/metrics`)).text();
      const value = (verdict: string, quantity: string, variant: string) =>
        new RegExp(
          `^probefleet_comparison_verdict\\{(?=[^}]*job="probefleet_compare")(?=[^}]*plan="nightly")(?=[^}]*quantity="${quantity}")(?=[^}]*region="${REGION}")(?=[^}]*variant="${variant}")(?=[^}]*verdict="${verdict}")[^}]*\\} (\\d)$`,
          'm',
        ).exec(text)?.[1];
      assert.equal(value('regressed', 'phase_total_p50', 'reused/http'), '1', text.slice(0, 2000));
      assert.equal(value('unchanged', 'phase_total_p50', 'reused/http'), '0');
      assert.equal(value('regressed', 'new_connection_cost', 'http'), '1');
      assert.match(text, /^probefleet_comparison_timestamp_seconds\{[^}]*\} \d/m);
    },
  );
});
