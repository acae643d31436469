// Where a fleet's Redis is and how long a command waits for it, unless told otherwise. Apart from
// common/redis.ts so that the options naming them in their help load no ioredis.

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** How long a command that ends (`run`, `runs`, `schedule`) waits for an answer from Redis. */
export const DEFAULT_REDIS_TIMEOUT_SECONDS = 10;
