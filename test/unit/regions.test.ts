// The parts of emulated regions that need no root: region specs from the command line, their
// validation, and the preflight's messages.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateRegionSpecs } from '../../regions/harness.js';
import {
  checkNfqueueSupported,
  checkRegionsSupported,
  RegionsUnavailableError,
  type MachineFacts,
} from '../../regions/preflight.js';
import { formatLoss, formatRate, formatRtt, parseRegionSpec, RegionSpecError } from '../../regions/region-spec.js';

describe('region specs: NAME=RTT[,RATE][,v6=RTT][,loss=P%[/P%]][,jitter=TIME][,seed=N]', () => {
  for (const [text, spec] of [
    ['eu-west=20ms', { name: 'eu-west', rttMs: 20 }],
    ['near=20', { name: 'near', rttMs: 20 }],
    ['slow=0.2s', { name: 'slow', rttMs: 200 }],
    ['base=0ms', { name: 'base', rttMs: 0 }],
    ['ap-south=160ms,1MB/s', { name: 'ap-south', rttMs: 160, rateBytesPerSecond: 1e6 }],
    ['dsl=30ms,8mbit', { name: 'dsl', rttMs: 30, rateBytesPerSecond: 1e6 }],
    ['edge=300ms,250kB/s', { name: 'edge', rttMs: 300, rateBytesPerSecond: 250e3 }],
    ['lossy=80ms,loss=2%', { name: 'lossy', rttMs: 80, lossPercent: { up: 2, down: 2 } }],
    ['up=80ms,loss=10%/0%', { name: 'up', rttMs: 80, lossPercent: { up: 10, down: 0 } }],
    ['half=20ms,loss=0.5%/1.25%', { name: 'half', rttMs: 20, lossPercent: { up: 0.5, down: 1.25 } }],
    ['shaky=60ms,jitter=10ms', { name: 'shaky', rttMs: 60, jitterMs: 10 }],
    [
      'sa-east=120ms,1MB/s,loss=2%,jitter=10ms,seed=7',
      { name: 'sa-east', rttMs: 120, rateBytesPerSecond: 1e6, lossPercent: { up: 2, down: 2 }, jitterMs: 10, seed: 7 },
    ],
    // Options in any order after the RTT (and the rate); a loss of 0 is a spec, not an error.
    [
      'any=20ms,seed=0,jitter=0.5s,loss=0%',
      { name: 'any', rttMs: 20, seed: 0, jitterMs: 500, lossPercent: { up: 0, down: 0 } },
    ],
    // IPv6 with a round trip of its own (without v6=, the same as IPv4's).
    ['near=20ms,v6=35ms', { name: 'near', rttMs: 20, ipv6RttMs: 35 }],
    ['v6-faster=80ms,v6=0.05s', { name: 'v6-faster', rttMs: 80, ipv6RttMs: 50 }],
    ['v6-only-delay=0ms,v6=20', { name: 'v6-only-delay', rttMs: 0, ipv6RttMs: 20 }],
    [
      'dual=20ms,1MB/s,jitter=5ms,v6=40ms,seed=3',
      { name: 'dual', rttMs: 20, rateBytesPerSecond: 1e6, jitterMs: 5, ipv6RttMs: 40, seed: 3 },
    ],
  ] as const) {
    test(`${text}`, () => assert.deepEqual(parseRegionSpec(text), spec));
  }

  for (const [text, message] of [
    ['near', /expected NAME=RTT\[,RATE\]/],
    ['near=', /expected NAME=RTT/],
    ['near=20parsecs', /RTT "20parsecs" is not a time/],
    ['near=20ms,fast', /rate "fast" is not a rate/],
    ['near=20ms,3furlongs/s', /rate "3furlongs\/s" is not a rate/],
    ['near=1.2.3ms', /is not a time/],
    ['near=20ms,', /"" is neither a rate \(right after the RTT\) nor one of v6=, loss=, jitter=, seed=/],
    ['near=20ms,loss=1%,1MB/s', /"1MB\/s" is neither a rate \(right after the RTT\)/],
    ['near=20ms,loss=1', /loss "1" is not a percentage \(loss=1% both ways, or loss=1%\/0% up\/down\)/],
    ['near=20ms,loss=1%/', /loss "1%\/" is not a percentage/],
    ['near=20ms,loss=-1%', /loss "-1%" is not a percentage/],
    ['near=20ms,jitter=5furlongs', /jitter "5furlongs" is not a time/],
    ['near=20ms,seed=-3', /seed "-3" is not a whole number/],
    ['near=20ms,seed=1.5', /seed "1.5" is not a whole number/],
    ['near=20ms,drop=1%', /unknown option "drop=" \(known: v6, loss, jitter, seed\)/],
    ['near=20ms,loss=1%,loss=2%', /"loss=" is given twice/],
    ['near=20ms,v6=35parsecs', /IPv6 RTT "35parsecs" is not a time \(use ms or s\)/],
    ['near=20ms,v6=', /IPv6 RTT "" is not a time/],
    ['near=20ms,v6=-5ms', /IPv6 RTT "-5ms" is not a time/],
    ['near=20ms,v6=30ms,v6=40ms', /"v6=" is given twice/],
    ['near=20ms,v4=30ms', /unknown option "v4=" \(known: v6, loss, jitter, seed\)/],
    ['near=20ms,v6=35ms,1MB/s', /"1MB\/s" is neither a rate \(right after the RTT\)/],
  ] as const) {
    test(`"${text}" is refused`, () =>
      assert.throws(
        () => parseRegionSpec(text),
        (err) => err instanceof RegionSpecError && message.test(err.message),
      ));
  }

  test('validation: names, duplicates, ranges', () => {
    assert.throws(() => validateRegionSpecs([]), /between 1 and 200 regions/);
    assert.throws(() => validateRegionSpecs([{ name: 'Near', rttMs: 1 }]), /region name "Near"/);
    assert.throws(
      () =>
        validateRegionSpecs([
          { name: 'a', rttMs: 1 },
          { name: 'a', rttMs: 2 },
        ]),
      /"a" is listed twice/,
    );
    assert.throws(() => validateRegionSpecs([{ name: 'a', rttMs: -1 }]), /RTT must be 0\.\.10000 ms/);
    assert.throws(
      () => validateRegionSpecs([{ name: 'a', rttMs: 1, ipv6RttMs: 10_001 }]),
      /region "a": IPv6 RTT must be 0\.\.10000 ms, got 10001/,
    );
    assert.throws(
      () => validateRegionSpecs([{ name: 'a', rttMs: 1, rateBytesPerSecond: 10 }]),
      /rate must be at least 1000 bytes\/s/,
    );
    assert.throws(
      () => validateRegionSpecs([{ name: 'a', rttMs: 1, lossPercent: { up: 101, down: 0 } }]),
      /loss up must be 0\.\.100 %, got 101/,
    );
    assert.throws(
      () => validateRegionSpecs([{ name: 'a', rttMs: 20, jitterMs: 30 }]),
      /jitter must be 0\.\.20 ms \(at most the RTT: a packet cannot arrive before it was sent\), got 30/,
    );
    // Jitter applies to both links: at most the smaller RTT.
    assert.throws(
      () => validateRegionSpecs([{ name: 'a', rttMs: 20, ipv6RttMs: 10, jitterMs: 15 }]),
      /jitter must be 0\.\.10 ms \(at most the IPv6 RTT: a packet cannot arrive before it was sent\), got 15/,
    );
    assert.throws(
      () => validateRegionSpecs([{ name: 'a', rttMs: 10, ipv6RttMs: 20, jitterMs: 15 }]),
      /jitter must be 0\.\.10 ms \(at most the RTT: /,
    );
    assert.throws(
      () => validateRegionSpecs([{ name: 'a', rttMs: 1, seed: 2 ** 32 }]),
      /seed must be an integer 0\.\.4294967295/,
    );
    assert.throws(
      () => validateRegionSpecs([{ name: 'a', rttMs: 20, jitterMs: 5 }], 'netem'),
      /region "a": loss and jitter come from the NFQUEUE helper .*, not netem; use --delay nfqueue or auto/,
    );
    validateRegionSpecs([{ name: 'a', rttMs: 20, lossPercent: { up: 0, down: 0 } }], 'netem');
    validateRegionSpecs([
      { name: 'a', rttMs: 0 },
      { name: 'b', rttMs: 60, rateBytesPerSecond: 1e6 },
      { name: 'c', rttMs: 0, lossPercent: { up: 100, down: 0 }, seed: 4294967295 },
      { name: 'd', rttMs: 20, jitterMs: 20 },
      { name: 'e', rttMs: 10, ipv6RttMs: 30, jitterMs: 10 },
      { name: 'f', rttMs: 0, ipv6RttMs: 0 },
    ]);
  });

  test('RTTs read back as one figure, or two where IPv6 has its own', () => {
    assert.equal(formatRtt({ rttMs: 20 }), '20 ms');
    assert.equal(formatRtt({ rttMs: 20, ipv6RttMs: 20 }), '20 ms');
    assert.equal(formatRtt({ rttMs: 10, ipv6RttMs: 30 }), '10 ms, IPv6 30 ms');
  });

  test('loss reads back as up / down, and is shown only where the link loses something', () => {
    assert.equal(formatLoss(undefined), '-');
    assert.equal(formatLoss({ up: 0, down: 0 }), '-');
    assert.equal(formatLoss({ up: 2, down: 2 }), '2% / 2%');
    assert.equal(formatLoss({ up: 0.5, down: 0 }), '0.5% / 0%');
  });

  test('rates read back the way people write them', () => {
    assert.equal(formatRate(undefined), '-');
    assert.equal(formatRate(1e6), '1 MB/s');
    assert.equal(formatRate(250e3), '250 kB/s');
    assert.equal(formatRate(1.5e9), '1.5 GB/s');
    assert.equal(formatRate(1000), '1 kB/s');
  });
});

describe('preflight', () => {
  const machine = (facts: Partial<MachineFacts>): MachineFacts => ({
    uid: 0,
    hasNetworkNamespaces: true,
    hasIpv6: true,
    hasCommand: () => true,
    ...facts,
  });
  const refused = (fn: () => void, message: RegExp) =>
    assert.throws(fn, (err) => err instanceof RegionsUnavailableError && message.test(err.message));

  test('root with namespaces and iproute2 may build regions', () => {
    checkRegionsSupported(machine({}));
    checkNfqueueSupported(machine({}));
  });
  test('without root it says so, and what to run', () =>
    refused(() => checkRegionsSupported(machine({ uid: 1000 })), /need root: .* Run as root/));
  test('without network namespaces it says so', () =>
    refused(() => checkRegionsSupported(machine({ hasNetworkNamespaces: false })), /need Linux network namespaces/));
  test('without IPv6 in the kernel it says so', () =>
    refused(() => checkRegionsSupported(machine({ hasIpv6: false })), /this kernel has no IPv6/));
  test('without ip or tc it names the package', () =>
    refused(
      () => checkRegionsSupported(machine({ hasCommand: (c) => c !== 'tc' })),
      /need tc: apt-get install iproute2/,
    ));
  test('without netem the NFQUEUE helper needs iptables-legacy and gcc', () =>
    refused(
      () => checkNfqueueSupported(machine({ hasCommand: (c) => c !== 'gcc' && c !== 'iptables-legacy' })),
      /helper needs iptables-legacy and gcc: apt-get install iptables gcc libnetfilter-queue-dev/,
    ));
  test('the helper needs ip6tables-legacy too (IPv6 links); one package for both', () =>
    refused(
      () => checkNfqueueSupported(machine({ hasCommand: (c) => !c.endsWith('tables-legacy') })),
      /helper needs iptables-legacy and ip6tables-legacy: apt-get install iptables libnetfilter-queue-dev/,
    ));
});
