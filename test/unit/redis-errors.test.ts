// What a Redis error means (common/redis-errors.ts): a table of the errors Redis and ioredis give,
// each with its kind; the message a full Redis gets; the backoff's waits.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Backoff, describeFull, isFull, RedisFullError, redisErrorKind } from '../../common/redis-errors.js';

/** An error as ioredis gives a reply error, with `previousErrors` for a transaction Redis discarded. */
const reply = (message: string, previousErrors?: Error[]) => Object.assign(new Error(message), { previousErrors });

describe('redisErrorKind', () => {
  const cases: [string, Error, string][] = [
    ['a write refused as full', reply("OOM command not allowed when used memory > 'maxmemory'."), 'oom'],
    [
      'a script whose write was refused as full',
      reply("OOM command not allowed when used memory > 'maxmemory'. script: 5ab4, on @user_script:589."),
      'oom',
    ],
    [
      'a transaction discarded because a command in it was refused as full',
      reply('EXECABORT Transaction discarded because of previous errors.', [
        reply("OOM command not allowed when used memory > 'maxmemory'."),
      ]),
      'oom',
    ],
    ['our own error for it', new RedisFullError('Redis is full (...)'), 'oom'],
    ['a write to a replica', reply("READONLY You can't write against a read only replica."), 'readonly'],
    ['a connection lost mid-command', reply('Command aborted due to connection close'), 'connection'],
    ['a refused connection', reply('connect ECONNREFUSED 127.0.0.1:6379'), 'connection'],
    ['a bounded command past its bound', reply('Command timed out'), 'connection'],
    [
      "a Cluster's slot on a dead primary",
      reply('Too many Cluster redirections. Last error: ReplyError: MOVED 224 127.0.0.1:33373'),
      'connection',
    ],
    ['a Cluster failing over', reply('CLUSTERDOWN The cluster is down'), 'connection'],
    ['a slot moving', reply('TRYAGAIN Multiple keys request during rehashing of slot'), 'connection'],
    ['no primary named yet', reply('All sentinels are unreachable. Retrying from scratch after 10ms.'), 'connection'],
    ['anything else', reply('ERR unknown command'), 'other'],
    ['text that only mentions OOM', reply('ERR value is not OOM'), 'other'],
  ];
  for (const [what, err, kind] of cases) test(what, () => assert.equal(redisErrorKind(err), kind));
});

test('a full Redis is named with its limit, its policy and what it uses', () => {
  const memory = { usedBytes: 4_500_000, maxBytes: 4_194_304, policy: 'noeviction' };
  assert.equal(describeFull(memory), 'Redis is full (maxmemory 4.0 MiB, policy noeviction, 4.3 MiB used)');
  assert.equal(isFull(memory), true);
  assert.equal(isFull({ ...memory, policy: 'allkeys-lru' }), false, 'a policy that evicts makes room');
  assert.equal(isFull({ ...memory, maxBytes: 0 }), false, 'no limit');
  assert.equal(describeFull({ usedBytes: 900, maxBytes: 1, policy: 'noeviction' }).includes('maxmemory 1 B'), true);
});

test('the backoff doubles from 1 s up to 30 s, and is back to none after a success', () => {
  const backoff = new Backoff();
  assert.equal(backoff.waitMs, 0);
  assert.deepEqual(
    Array.from({ length: 7 }, () => backoff.failed()),
    [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000],
  );
  backoff.succeeded();
  assert.equal(backoff.waitMs, 0);
});
