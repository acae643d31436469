// Plans name lab servers by role (`lab:keepalive/nagle`); the entry point that knows where the
// lab listens resolves them before the plan is split.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { labAtOf } from '../../cli/options/lab.js';
import { BadArgumentError } from '../../common/bad-input.js';
import { jobTargetSchema } from '../../contracts/job.js';
import {
  DEFAULT_LAB_PORT,
  LAB_PORT_OFFSETS,
  LAB_ROLES,
  labAddressAt,
  parseLabUrl,
  resolveLabUrl,
} from '../../contracts/lab-roles.js';
import { withLabTargets } from '../../coordinator/lab-targets.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { splitPlan } from '../../coordinator/split.js';
import { LAB_SERVERS } from '../../lab/index.js';

const PLAN = `
name: roles
targets:
  - { name: nagle, url: "lab:keepalive/nagle?x=1" }
  - { name: tls, url: "lab:https", tls: { insecure: true } }
  - { name: real, url: "http://127.0.0.1:9/" }
experiments:
  - { probe: tls, targets: [tls], versions: ["1.3"] }
  - { probe: reuse, targets: [nagle, real], requests: 2, modes: [reused] }
`;

describe('lab servers by role', () => {
  test('every role has a lab server of the same scheme and port offset, and every lab server a role', () => {
    assert.deepEqual(
      Object.fromEntries(LAB_SERVERS.map((s) => [s.name, s.scheme])),
      LAB_ROLES as Record<string, string>,
    );
    assert.deepEqual(Object.fromEntries(LAB_SERVERS.map((s) => [s.name, s.offset])), LAB_PORT_OFFSETS);
  });

  test('lab URLs: a role and a path (default /); anything else says what is wrong', () => {
    assert.deepEqual(parseLabUrl('lab:keepalive/assets/products.json?gzip=9'), {
      role: 'keepalive',
      path: '/assets/products.json?gzip=9',
    });
    assert.deepEqual(parseLabUrl('lab:h2c'), { role: 'h2c', path: '/' });
    assert.match(
      (parseLabUrl('lab:nope/') as { problem: string }).problem,
      /^unknown lab server "nope" \(lab servers: /,
    );
    assert.match((parseLabUrl('lab:/x') as { problem: string }).problem, /^not a lab URL/);
    assert.match((parseLabUrl('lab:constructor') as { problem: string }).problem, /unknown lab server/);
  });

  test('resolved at an address: the role scheme, host (IPv6 bracketed) and port', () => {
    const lab = labAddressAt('10.77.0.1', 18170);
    assert.equal(resolveLabUrl('lab:keepalive/nagle', lab), 'http://10.77.0.1:18170/nagle');
    assert.equal(resolveLabUrl('lab:h2', lab), 'https://10.77.0.1:18173/');
    assert.equal(resolveLabUrl('lab:h2-rst/', labAddressAt('::1', 20000)), 'https://[::1]:20029/');
  });

  test('lab:dns/NAME is a name the lab DNS server answers, wherever the lab is; lab:dns as a resolver is its address', async () => {
    assert.equal(
      resolveLabUrl('lab:dns/slow-150.ttl-2', labAddressAt('10.77.0.1', 18170)),
      'http://slow-150.ttl-2.lab.probefleet.test/',
    );
    assert.equal(resolveLabUrl('lab:dns', labAddressAt('10.77.0.1', 18170)), 'http://lab.probefleet.test/');
    assert.match(
      (parseLabUrl('lab:dns/a_b') as { problem: string }).problem,
      /^lab:dns\/NAME names a host under lab\.probefleet\.test/,
    );
    const loaded = await parsePlan(
      `
name: dns-roles
targets: [{ name: slow, url: "lab:dns/slow-150" }]
experiments: [{ probe: dns, resolvers: [lab:dns, system], caches: [cold] }]
`,
      'dns.yaml',
    );
    assert.throws(() => splitPlan(loaded, 'r'), /lab targets not resolved before splitting: slow/);
    assert.throws(
      () => withLabTargets(loaded, undefined, 'run with --lab'),
      (err: Error) =>
        err.message ===
        'dns.yaml: target slow names a lab server (lab:...); experiments[0] (lab:dns) names a lab server in its parameters; run with --lab',
    );
    const jobs = splitPlan(withLabTargets(loaded, labAddressAt('::1', 20000), ''), 'r');
    assert.deepEqual(
      jobs.map((j) => `${j.target.url} ${(j.variant as { resolver: string }).resolver}`),
      ['http://slow-150.lab.probefleet.test/ [::1]:20013', 'http://slow-150.lab.probefleet.test/ system'],
    );
  });

  test('--lab-at is HOST:PORT, servers at PORT + their offsets', () => {
    assert.deepEqual(labAtOf('lab:18170'), labAddressAt('lab', 18170));
    assert.deepEqual(labAtOf('[::1]:28170').host, '::1');
    for (const bad of ['nope', 'lab', 'http://lab:18170', 'lab:18170/x', 'a@lab:1'])
      assert.throws(() => labAtOf(bad), BadArgumentError, bad);
  });

  test('a plan resolves before it is split: jobs carry real URLs; unresolved, it cannot be split', async () => {
    const loaded = await parsePlan(PLAN, 'roles.yaml');
    assert.throws(() => splitPlan(loaded, 'r'), /lab targets not resolved before splitting: nagle, tls/);
    assert.throws(
      () => withLabTargets(loaded, undefined, 'run with --lab'),
      (err: Error) =>
        err instanceof BadArgumentError &&
        err.message === 'roles.yaml: targets nagle, tls name a lab server (lab:...); run with --lab',
    );
    const jobs = splitPlan(withLabTargets(loaded, labAddressAt('127.0.0.1', DEFAULT_LAB_PORT), ''), 'r');
    assert.deepEqual(
      jobs.map((j) => `${j.target.name} ${j.target.url}`),
      ['tls https://127.0.0.1:18172/', 'nagle http://127.0.0.1:18170/nagle?x=1', 'real http://127.0.0.1:9/'],
    );
  });

  test('a job never carries a lab URL: the worker refuses one', () => {
    assert.equal(jobTargetSchema.safeParse({ name: 'a', url: 'lab:keepalive/' }).success, false);
    assert.equal(jobTargetSchema.safeParse({ name: 'a', url: 'http://127.0.0.1:1/' }).success, true);
  });
});
