// The shared limiter as the server runs it: a Redis connection, quota leases on it (`leases.ts`),
// and the failover around them (`failover.ts`).
import { Redis } from 'ioredis';
import type { Logger } from '../../log.ts';
import { redactUrl } from '../../redact.ts';
import { FailoverLimiter, type RedisFailMode } from './failover.ts';
import { LeaseLimiter, type LeaseStats } from './leases.ts';
import type { LimiterEvent, RateLimiter } from './limiter.ts';
import { RedisLimiter } from './redis.ts';

/**
 * A Redis command not answered within this time fails, and the limiter fails over, along with every
 * request waiting on the same run. The probe's PING has the same bound, so a slow Redis stays out
 * of use until it answers in time.
 */
const COMMAND_TIMEOUT_MS = 500;
const CONNECT_TIMEOUT_MS = 2_000;
/**
 * The longest delay between reconnection attempts, which never stop. Since reconnecting triggers a
 * probe, limits are shared again within about this long of Redis's return.
 */
const MAX_RECONNECT_DELAY_MS = 1_000;

export interface OpenRedisLimiterOptions {
  /** `redis://[:password@]host:port[/db]`, or `rediss://` for TLS. */
  url: string;
  mode: RedisFailMode;
  /** The in-process limiter used while Redis is down in fail-open mode. */
  fallback: RateLimiter;
  log: Logger;
  onEvent?: (event: LimiterEvent) => void;
  /** Receives a function that reads the lease statistics, for /metrics. */
  leaseStats?: (read: () => LeaseStats) => void;
}

/**
 * Connects to Redis and returns the shared limiter with its failover. An unreachable Redis does
 * not stop start-up: the limiter starts down (logged) and uses Redis once a probe reaches it.
 * Commands are never queued while disconnected, so no request waits for a Redis that is down.
 *
 * @example
 * const limiter = await openRedisLimiter({ url: 'redis://cache:6379', mode: 'open', fallback, log });
 */
export async function openRedisLimiter({
  url,
  mode,
  fallback,
  log,
  onEvent,
  leaseStats,
}: OpenRedisLimiterOptions): Promise<FailoverLimiter> {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    connectionName: 'petstore',
    retryStrategy: (attempt) => Math.min(attempt * 200, MAX_RECONNECT_DELAY_MS),
  });
  // Failures are logged through decisions and probes, once per state change. Keep the socket's
  // error for that log, since a refused command only says "Connection is closed."
  let socketError: string | undefined;
  client.on('error', (err: Error) => {
    socketError = err.message;
  });
  client.on('ready', () => {
    socketError = undefined;
  });
  // A timeout names the limit it hit; a slow Redis fails over just like a gone one.
  const explain = (err: unknown) =>
    socketError ??
    (err instanceof Error
      ? err.message === 'Command timed out'
        ? `no answer within ${COMMAND_TIMEOUT_MS} ms`
        : err.message
      : String(err));
  const name = redactUrl(url);
  // Lease hand-backs wait while the failover is not using Redis, and resume when it is back.
  const leases = new LeaseLimiter({
    shared: new RedisLimiter({ client, onEvent }),
    online: () => limiter.status().backend === 'redis',
  });
  leaseStats?.(() => leases.stats());
  const limiter: FailoverLimiter = new FailoverLimiter({
    primary: leases,
    fallback,
    probe: () => client.ping(),
    mode,
    log,
    name,
    close: async () => {
      await leases.close();
      await client.quit().catch(() => client.disconnect());
    },
    explain,
  });
  // React to a lost or restored connection at once, not at the next request or probe, so /readyz
  // stays accurate.
  client.on('close', () => limiter.markDown(explain(new Error('Connection is closed.'))));
  client.on('ready', () => void limiter.check());
  leases.start();
  try {
    await client.connect();
    log.info('rate limiter: limits and bans are shared through Redis', { redis: name, failMode: mode });
  } catch (err) {
    limiter.markDown(explain(err));
  }
  return limiter;
}
