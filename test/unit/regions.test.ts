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
import { formatRate, parseRegionSpec, RegionSpecError } from '../../regions/region-spec.js';

describe('region specs: NAME=RTT[,RATE]', () => {
  for (const [text, spec] of [
    ['eu-west=20ms', { name: 'eu-west', rttMs: 20 }],
    ['near=20', { name: 'near', rttMs: 20 }],
    ['slow=0.2s', { name: 'slow', rttMs: 200 }],
    ['base=0ms', { name: 'base', rttMs: 0 }],
    ['ap-south=160ms,1MB/s', { name: 'ap-south', rttMs: 160, rateBytesPerSecond: 1e6 }],
    ['dsl=30ms,8mbit', { name: 'dsl', rttMs: 30, rateBytesPerSecond: 1e6 }],
    ['edge=300ms,250kB/s', { name: 'edge', rttMs: 300, rateBytesPerSecond: 250e3 }],
  ] as const) {
    test(`${text}`, () => assert.deepEqual(parseRegionSpec(text), spec));
  }

  for (const [text, message] of [
    ['near', /expected NAME=RTT\[,RATE\]/],
    ['near=', /expected NAME=RTT/],
    ['near=20parsecs', /RTT "20parsecs" is not a time/],
    ['near=20ms,fast', /expected NAME=RTT/],
    ['near=20ms,3furlongs/s', /rate "3furlongs\/s" is not a rate/],
    ['near=1.2.3ms', /is not a time/],
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
      () => validateRegionSpecs([{ name: 'a', rttMs: 1, rateBytesPerSecond: 10 }]),
      /rate must be at least 1000 bytes\/s/,
    );
    validateRegionSpecs([
      { name: 'a', rttMs: 0 },
      { name: 'b', rttMs: 60, rateBytesPerSecond: 1e6 },
    ]);
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
});
