import { afterAll } from 'bun:test';
import { Redis } from 'ioredis';
import { throwawayUrl } from './throwaway.ts';

/**
 * The Redis server the tests run the limiter's Lua script on: `make unit` starts a throwaway one
 * through scripts/with-redis.sh. Without one, a test that needs it fails with this message instead
 * of skipping, so the TypeScript and Lua limiters are never left uncompared.
 *
 * @example
 * const client = new Redis(testRedisUrl())
 */
export function testRedisUrl(): string {
  return throwawayUrl('PETSTORE_TEST_REDIS_URL', 'runs the Lua script on a Redis server', 'redis', 'redis-server');
}

/**
 * Connections to the test server for one test file, each quit after its tests, and key prefixes
 * that keep each test's keys apart from every other test's and run's. Called once at the top of
 * the file (it registers the `afterAll`).
 *
 * @example
 * const redis = testRedis()
 * new RedisLimiter({ client: redis.client(), clock, prefix: redis.prefix() })
 */
export function testRedis(): { client(): Redis; prefix(): string } {
  const clients: Redis[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.quit()));
  });
  return {
    client() {
      const c = new Redis(testRedisUrl(), { enableOfflineQueue: true, maxRetriesPerRequest: 0 });
      clients.push(c);
      return c;
    },
    prefix: () => `petstore:test:${crypto.randomUUID().slice(0, 8)}:`,
  };
}
