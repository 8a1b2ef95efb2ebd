import { type Context, Hono } from 'hono';
import { type Clock, systemClock } from './clock.ts';
import { type DocsOptions, docsRoutes } from './docs/routes.ts';
import type { AppEnv } from './env.ts';
import { notFound, onError } from './http/errors.ts';
import { gateway } from './gateway/index.ts';
import type { KeyTable } from './gateway/keys/table.ts';
import type { LimiterStatus } from './gateway/limiter/failover.ts';
import type { RateLimiter } from './gateway/limiter/limiter.ts';
import type { BanPolicy } from './gateway/plans.ts';
import { type Logger, silentLogger } from './log.ts';
import type { Metrics } from './metrics/registry.ts';
import { apiPass } from './middleware/api-pass.ts';
import { exchange } from './middleware/exchange.ts';
import { countRequests, countStoreErrors } from './http/steps/count-requests.ts';
import { healthRoutes } from './ops/health.ts';
import { metricsRoutes } from './ops/metrics.ts';
import { petRoutes } from './api/pets.ts';
import type { PetStore } from './store/store.ts';

/** Largest accepted request body: 64 KiB. */
export const MAX_BODY_BYTES = 64 * 1024;

export interface AppOptions {
  store: PetStore;
  /** The current keys; a function so a reload swaps them between requests. */
  keys: () => KeyTable;
  limiter: RateLimiter;
  clock?: Clock;
  log?: Logger;
  /** The client address the limiter counts anonymous requests against. */
  clientAddress?: (c: Context<AppEnv>) => string;
  ban?: BanPolicy;
  /** Production and staging URLs the reference page offers besides this server. */
  docs?: DocsOptions;
  /** Counts requests, 429s and store errors when given (`--metrics`). */
  metrics?: Metrics;
  /** Whether this app serves `GET /metrics` (false when it has a port of its own). */
  serveMetrics?: boolean;
  /** Why `/readyz` should fail (e.g. shutting down), or undefined. */
  notReady?: () => string | undefined;
  /** Most requests one key may have in flight (`--max-in-flight`). */
  maxInFlight?: number;
  /** IPv6 callers without a valid key are counted by this prefix (`--ipv6-prefix`). */
  ipv6Prefix?: number;
  /** Where the rate limiter decides now, for `/readyz` (the Redis limiter's failover status). */
  limiterStatus?: () => LimiterStatus;
  /** Origins whose pages may call the API (`--cors-origin`); none: no CORS at all. */
  corsOrigins?: readonly string[];
}

/**
 * Builds the whole service as a Hono app, without a listener: `main.ts` serves it on the
 * runtime at hand, tests call `app.request()`.
 *
 * @example
 * const app = createApp({ store: new MemoryStore(), keys: () => table, limiter })
 * const res = await app.request('/v1/pets', { headers: { Authorization: `Bearer ${token}` } })
 */
export function createApp({
  store,
  keys,
  limiter,
  clock = systemClock,
  log = silentLogger,
  clientAddress = () => 'unknown',
  ban,
  docs = {},
  metrics,
  serveMetrics = true,
  notReady,
  maxInFlight,
  ipv6Prefix,
  limiterStatus,
  corsOrigins = [],
}: AppOptions) {
  const app = new Hono<AppEnv>();
  const handleError = onError(
    (err, c) => log.error('unhandled error', { requestId: c.get('requestId'), error: String(err) }),
    (err, c) => log.warn('store unavailable', { requestId: c.get('requestId'), error: String(err) }),
  );
  if (metrics) {
    // Outermost, so it counts every answer (the 414 too) and times all of it.
    app.use(countRequests({ metrics }));
    store = countStoreErrors(store, metrics);
  }
  // Request id, API headers, 414, compression, log line: one layer (src/middleware/exchange.ts).
  app.use(exchange({ log, clock, clientAddress, onError: handleError }));
  if (metrics && serveMetrics) app.route('/', metricsRoutes(metrics));

  app.route('/', healthRoutes({ store, keys, log, notReady, limiterStatus }));
  app.route('/', docsRoutes(docs));

  // CORS (a preflight needs no key), the gateway, the body's limits: one layer.
  const pass = gateway({ keys, limiter, clientAddress, ban, maxInFlight, ipv6Prefix, clock });
  app.use('/v1/*', apiPass({ gateway: pass, maxBodyBytes: MAX_BODY_BYTES, corsOrigins, onError: handleError }));
  app.route('/v1', petRoutes(store, { clock }));

  app.notFound(notFound);
  app.onError(handleError);
  return app;
}

export type App = ReturnType<typeof createApp>;
