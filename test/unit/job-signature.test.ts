import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  canonicalJson,
  JobKeyError,
  jobKeyFromEnv,
  JobSignatureError,
  openSignedData,
  signData,
} from '../../common/job-signature.js';

const KEY = 'k'.repeat(32);

describe('job signatures', () => {
  test('canonical JSON sorts keys at every depth and drops undefined, as JSON does', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [1, { z: 1, y: undefined, x: 'é' }], c: null } }),
      '{"a":{"c":null,"d":[1,{"x":"é","z":1}]},"b":1}',
    );
    assert.equal(canonicalJson({ a: 1, b: 2 }), canonicalJson({ b: 2, a: 1 }));
  });

  test('signed data opens with the same key, whatever the key order after a trip through Redis', () => {
    const data = { jobId: 'j1', target: { url: 'http://x/', name: 't' }, params: { requests: 3 } };
    const signed = signData(data, KEY);
    const reordered = JSON.parse(
      JSON.stringify({
        params: signed.params,
        signature: (signed as { signature: string }).signature,
        target: { name: 't', url: 'http://x/' },
        jobId: 'j1',
      }),
    );
    assert.deepEqual(openSignedData(reordered, KEY), data);
  });

  test('with a key: unsigned, altered and foreign-key data is refused; without one the signature is only removed', () => {
    const signed = signData({ a: 1 }, KEY);
    assert.throws(
      () => openSignedData({ a: 1 }, KEY),
      (err: Error) => err instanceof JobSignatureError && /^unsigned/.test(err.message),
    );
    assert.throws(() => openSignedData({ ...signed, a: 2 }, KEY), /^JobSignatureError: bad signature/);
    assert.throws(() => openSignedData(signData({ a: 1 }, 'x'.repeat(32)), KEY), /bad signature/);
    assert.throws(() => openSignedData({ ...signed, signature: 'hmac-sha256:00' }, KEY), /bad signature/);
    assert.throws(() => openSignedData('a string', KEY), /unsigned/);
    assert.deepEqual(openSignedData(signed, undefined), { a: 1 });
    assert.deepEqual(signData({ a: 1 }, undefined), { a: 1 });
  });

  test('the key comes from PROBEFLEET_JOB_KEY and must be long enough', () => {
    assert.equal(jobKeyFromEnv({}), undefined);
    assert.equal(jobKeyFromEnv({ PROBEFLEET_JOB_KEY: '' }), undefined);
    assert.equal(jobKeyFromEnv({ PROBEFLEET_JOB_KEY: KEY }), KEY);
    assert.throws(() => jobKeyFromEnv({ PROBEFLEET_JOB_KEY: 'short' }), JobKeyError);
  });
});
