import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DEFAULT_QUEUE_PREFIX,
  jobKey,
  parseJobKey,
  prefixProblem,
  regionOfQueue,
  regionQueueName,
} from '../../contracts/queues.js';
import { redactRedisUrl, redisOptions } from '../../common/redis.js';

describe('queue names and prefixes', () => {
  test('a prefix needs one hash tag and no ":"', () => {
    assert.equal(prefixProblem(DEFAULT_QUEUE_PREFIX), undefined);
    assert.equal(prefixProblem('{fleet}-staging'), undefined);
    for (const bad of ['probefleet', '{}', '{a}{b}', 'pf:{a}', '{a b}', ''])
      assert.match(prefixProblem(bad) ?? '', /hash tag/, bad);
  });

  test('region queues and job keys round-trip', () => {
    assert.equal(regionQueueName('eu-west'), 'probe.eu-west');
    assert.doesNotMatch(regionQueueName('eu-west'), /:/);
    assert.equal(regionOfQueue('probe.eu-west'), 'eu-west');
    assert.equal(regionOfQueue('runs'), undefined);
    const key = jobKey('{pf}', 'probe.a', 'run-1.a.http.reuse-new-http-0123456789');
    assert.equal(key, '{pf}:probe.a:run-1.a.http.reuse-new-http-0123456789');
    assert.deepEqual(parseJobKey('{pf}', key), {
      queueName: 'probe.a',
      jobId: 'run-1.a.http.reuse-new-http-0123456789',
    });
    assert.equal(parseJobKey('{other}', key), undefined);
  });
});

describe('Redis URLs', () => {
  test('user, password, database and TLS come from the URL; a CA given beside it is kept', () => {
    assert.deepEqual(redisOptions({ url: 'redis://127.0.0.1:6379' }), {
      host: '127.0.0.1',
      port: 6379,
      db: 0,
      maxRetriesPerRequest: null,
      disconnectTimeout: 200,
    });
    assert.deepEqual(redisOptions({ url: 'rediss://probe:p%40ss@redis.internal:6380/2', caPem: 'PEM' }), {
      host: 'redis.internal',
      port: 6380,
      db: 2,
      username: 'probe',
      password: 'p@ss',
      tls: { servername: 'redis.internal', ca: 'PEM' },
      maxRetriesPerRequest: null,
      disconnectTimeout: 200,
    });
    assert.deepEqual(redisOptions({ url: 'redis://:secret@[::1]' }), {
      host: '::1',
      port: 6379,
      db: 0,
      password: 'secret',
      maxRetriesPerRequest: null,
      disconnectTimeout: 200,
    });
    // A command that ends bounds every command, and its connecting, by its timeout.
    assert.deepEqual(
      { ...redisOptions({ url: 'redis://127.0.0.1', commandTimeoutMs: 1500 }), host: undefined },
      {
        host: undefined,
        port: 6379,
        db: 0,
        maxRetriesPerRequest: null,
        disconnectTimeout: 200,
        commandTimeout: 1500,
        connectTimeout: 1500,
      },
    );
  });

  test('bad URLs are refused with the reason; passwords never reach messages', () => {
    assert.throws(() => redisOptions({ url: 'http://127.0.0.1' }), /unsupported Redis URL scheme "http:"/);
    assert.throws(() => redisOptions({ url: 'redis://127.0.0.1/x' }), /database "x" is not a number/);
    assert.throws(() => redisOptions({ url: 'not a url' }), /not a valid Redis URL/);
    assert.equal(redactRedisUrl('rediss://probe:s3cret@host:6380/0'), 'rediss://probe:***@host:6380/0');
    assert.equal(redactRedisUrl('redis://host:6379'), 'redis://host:6379');
  });
});
