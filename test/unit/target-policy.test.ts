// The worker's target policy, decided on addresses directly: nothing here connects anywhere.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TargetPolicy, TargetPolicyError, TargetRefusedError } from '../../worker/target-policy.js';

const strict = new TargetPolicy({ allowLoopback: false, allowTargets: [] });
const lab = new TargetPolicy({ allowLoopback: true, allowTargets: [] });
const internal = new TargetPolicy({
  allowLoopback: false,
  allowTargets: ['10.77.0.0/16', 'fd00:1::/32', '*.internal.example', 'db.example', '192.0.2.7'],
});

/** [address, refused by the strict policy with this rule (or null: allowed)] */
const STRICT_CASES: [string, RegExp | null][] = [
  ['93.184.215.14', null],
  ['8.8.8.8', null],
  ['2606:4700::1111', null],
  ['127.0.0.1', /loopback \(127\.0\.0\.0\/8\): allowed only with --allow-loopback/],
  ['127.255.255.254', /loopback/],
  ['::1', /loopback \(::1\/128\)/],
  ['0:0:0:0:0:0:0:1', /loopback \(::1\/128\)/],
  ['::ffff:127.0.0.1', /loopback \(127\.0\.0\.0\/8\)/],
  ['::ffff:7f00:1', /loopback \(127\.0\.0\.0\/8\)/],
  [
    '169.254.169.254',
    /link-local \(cloud metadata lives here\) \(169\.254\.0\.0\/16\): allowed only by --allow-targets/,
  ],
  ['::ffff:169.254.169.254', /link-local/],
  ['fe80::1', /link-local \(fe80::\/10\)/],
  ['fe80::1%eth0', /link-local \(fe80::\/10\)/],
  ['febf:ffff::1', /link-local \(fe80::\/10\)/],
  ['10.0.0.1', /private \(10\.0\.0\.0\/8\)/],
  ['172.16.0.1', /private \(172\.16\.0\.0\/12\)/],
  ['172.31.255.255', /private \(172\.16\.0\.0\/12\)/],
  ['172.32.0.1', null],
  ['192.168.1.1', /private \(192\.168\.0\.0\/16\)/],
  ['100.64.0.1', /CGNAT/],
  ['100.127.255.255', /CGNAT/],
  ['100.128.0.1', null],
  ['fc00::1', /unique local \(fc00::\/7\)/],
  ['fd12:3456::1', /unique local/],
  ['0.0.0.0', /unspecified.*never a target/],
  ['::', /unspecified \(::\/128\): never a target/],
  ['224.0.0.1', /multicast/],
  ['255.255.255.255', /reserved/],
  ['ff02::1', /multicast \(ff00::\/8\)/],
  ['64:ff9b::a00:1', /private \(10\.0\.0\.0\/8\)/],
  ['2002:a9fe:a9fe::1', /link-local/],
  ['::a00:1', /private \(10\.0\.0\.0\/8\)/],
  ['not-an-address', /not an IP address/],
];

describe('target policy', () => {
  test('without permissions: public addresses pass; loopback, private, link-local and the rest are refused, naming the rule', () => {
    for (const [address, refusal] of STRICT_CASES) {
      const decision = strict.decide(address, address);
      if (refusal === null) assert.deepEqual(decision, { allowed: true }, address);
      else {
        assert.equal(decision.allowed, false, `${address} is refused`);
        assert.match((decision as { reason: string }).reason, refusal, address);
      }
    }
  });

  test('--allow-loopback allows loopback (also IPv4-mapped) and nothing else', () => {
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '127.1.2.3'])
      assert.deepEqual(lab.decide(address, address), { allowed: true }, address);
    for (const address of ['10.0.0.1', '169.254.169.254', 'fe80::1', '0.0.0.0'])
      assert.equal(lab.decide(address, address).allowed, false, address);
  });

  test('--allow-targets: CIDRs and host patterns allow internal addresses; never loopback, never the unspecified address', () => {
    assert.deepEqual(internal.decide('10.77.0.1', '10.77.0.1'), { allowed: true });
    assert.deepEqual(internal.decide('::ffff:10.77.3.4', '::ffff:10.77.3.4'), { allowed: true });
    assert.equal(internal.decide('10.78.0.1', '10.78.0.1').allowed, false);
    assert.deepEqual(internal.decide('fd00:1:2::3', 'fd00:1:2::3'), { allowed: true });
    assert.equal(internal.decide('fd00:2::3', 'fd00:2::3').allowed, false);
    assert.deepEqual(internal.decide('api.internal.example', '10.1.2.3'), { allowed: true });
    assert.deepEqual(internal.decide('A.B.Internal.Example.', '169.254.1.1'), { allowed: true });
    assert.equal(
      internal.decide('internal.example', '10.1.2.3').allowed,
      false,
      '*.x matches names under x, not x itself',
    );
    assert.equal(internal.decide('evil-internal.example', '10.1.2.3').allowed, false);
    assert.deepEqual(internal.decide('db.example', '192.168.0.9'), { allowed: true });
    assert.equal(internal.decide('x.db.example', '192.168.0.9').allowed, false);
    assert.deepEqual(internal.decide('192.0.2.7', '192.0.2.7'), { allowed: true }, 'a bare address is a /32');
    assert.equal(
      internal.decide('api.internal.example', '127.0.0.1').allowed,
      false,
      'loopback needs --allow-loopback',
    );
    assert.equal(internal.decide('api.internal.example', '0.0.0.0').allowed, false);
    assert.match(
      (internal.decide('x.example', '10.9.9.9') as { reason: string }).reason,
      /^10\.9\.9\.9 \(x\.example\) is private/,
    );
  });

  test('bad --allow-targets entries are refused when the policy is made', () => {
    for (const entry of ['10.0.0.0/33', '10.0.0/8', 'fe80::/129', '*', '*.', 'a..b', 'http://x', '10.0.0.0/8/8', '']) {
      assert.throws(
        () => new TargetPolicy({ allowLoopback: false, allowTargets: [entry] }),
        TargetPolicyError,
        JSON.stringify(entry),
      );
    }
  });

  test('resolve: a name is checked on the address it resolved to, and that address is the one returned', async () => {
    const hosts: Record<string, string> = {
      'metadata.example': '169.254.169.254',
      'api.example': '93.184.215.14',
      'me.example': '127.0.0.1',
    };
    const lookup = async (host: string) => ({ address: hosts[host] });
    const policy = new TargetPolicy({ allowLoopback: false, allowTargets: [] }, lookup);
    assert.equal(await policy.resolve('api.example'), '93.184.215.14');
    await assert.rejects(
      policy.resolve('metadata.example'),
      (err: Error) =>
        err instanceof TargetRefusedError && /169\.254\.169\.254 \(metadata\.example\) is link-local/.test(err.message),
    );
    await assert.rejects(policy.resolve('me.example'), TargetRefusedError);
    await assert.rejects(policy.resolve('[::1]'), /::1 is loopback/);
    const lookupFails = new TargetPolicy({ allowLoopback: false, allowTargets: [] }, async () =>
      Promise.reject(Object.assign(new Error('no such host'), { code: 'ENOTFOUND' })),
    );
    await assert.rejects(lookupFails.resolve('nowhere.example'), { code: 'ENOTFOUND' });
  });
});
