// The Hono apps, without a listener: createApp() builds the API from the operations table,
// adminApp() and metricsApp() the apps of the admin and metrics ports. src/serve/start.ts and
// worker.ts serve the API, start.ts the admin app, and src/serve/listeners.ts the metrics app;
// test/testing.ts builds the API in memory for tests.
import { type Context, Hono } from 'hono';
import { METHOD_NAME_ALL } from 'hono/router';
import { TrieRouter } from 'hono/router/trie-router';
import { ADMIN_OPERATIONS, ADMIN_PREFIX } from './admin/admin-operations.ts';
import type { AdminDeps } from './admin/handlers.ts';
import { API_PREFIX, servedOperations } from './api/operations.ts';
import type { AppEnv } from './app-env.ts';
import { type Clock, systemClock } from './core/clock.ts';
import { DEFAULT_ORDER_HOLD_MS } from './core/order-records.ts';
import { isUnder } from './core/paths.ts';
import {
  createAdmissionCheck,
  type GatewayOptions,
  type LimiterStatus,
  type RateLimiter,
  validAuthorizationTest,
  wouldRefuseReporter,
} from './gateway/gateway.ts';
import type { KeyAdmin } from './keys/key-admin.ts';
import type { BanPolicy } from './keys/plans.ts';
import type { KeyTable } from './keys/table.ts';
import { type Logger, silentLogger } from './log.ts';
import { ADMIN_OPERATION_LABEL } from './metrics/labels.ts';
import type { Metrics } from './metrics/registry.ts';
import { MAX_BODY_BYTES } from './pipeline/body-limit.ts';
import { serviceRouteHandlers, tableRouteHandlers } from './pipeline/pipeline.ts';
import { byRouteOrder } from './pipeline/route-order.ts';
import type { DocsOptions } from './reference/docs-routes.ts';
import { metricsRoute } from './service-routes/metrics.ts';
import { serviceRoutes } from './service-routes/routes.ts';
import type { DataStore } from './store/store.ts';

/**
 * The client address of an app given none: one address, `'unknown'`, for every request. Tests
 * that build an app alone use it, and so does the metrics port, which counts no client.
 */
const UNKNOWN_CLIENT = (): string => 'unknown';

export interface AppOptions {
  /** The data store, inside the wrappers that `openServerStore` (src/serve/resources.ts) adds. */
  store: DataStore;
  /** The keys in force now (from `--keys`); see `GatewayOptions.keyTable`. */
  keyTable: () => KeyTable;
  limiter: RateLimiter;
  clock?: Clock;
  log?: Logger;
  /**
   * The client's address, which the limiter counts a keyless client's requests against. Every
   * server passes its adapter's; the default, `UNKNOWN_CLIENT`, is for tests.
   */
  clientAddress?: (c: Context<AppEnv>) => string;
  ban?: BanPolicy;
  /** Production and staging URLs the reference page offers besides this server. */
  docs?: DocsOptions;
  /**
   * Counts requests and 429s when given (`--metrics` or `--metrics-port`); the store's errors are
   * counted by its wrapper.
   */
  metrics?: Metrics;
  /** Whether this app serves `GET /metrics` (false when it has a port of its own). */
  serveMetrics?: boolean;
  /** Why `/readyz` should fail (e.g. shutting down), or undefined. */
  whyNotReady?: () => string | undefined;
  /** `--max-in-flight`; see `GatewayOptions.maxInFlight`. */
  maxInFlight?: number;
  /**
   * With `--workers`, the host's in-flight table and this worker's column, so the in-flight cap is
   * the host's; see `GatewayOptions.hostSlots`.
   */
  hostSlots?: GatewayOptions['hostSlots'];
  /** `--ipv6-prefix`; see `GatewayOptions.ipv6Prefix`. */
  ipv6Prefix?: number;
  /**
   * Where the rate limiter decides now, for `/readyz` (the Redis limiter's failover status);
   * undefined: in this process.
   */
  limiterStatus?: () => LimiterStatus | undefined;
  /** `--cors-origin`; see `RouteHandlersOptions.corsOrigins`. */
  corsOrigins?: readonly string[];
  /** Why the keys in force may be stale (`--keys store`, the database down), for `/readyz`. */
  keysProblem?: () => string | undefined;
  /** Records a decision's notices (webhook events) before its answer is sent. */
  notify?: GatewayOptions['notify'];
  /** Whether the experimental operations are served and documented (`--experimental`). */
  experimental?: boolean;
  /**
   * How long a placed order holds its pet, in ms: `startServer` passes `--order-hold`'s value;
   * when not given (tests), the flag's own default (`DEFAULT_ORDER_HOLD_MS`).
   */
  orderHoldMs?: number;
}

/**
 * Builds the API's Hono app, without a listener. `startServer()` of src/serve/start.ts serves it;
 * tests call `app.request()`.
 *
 * @example
 * const app = createApp({ store: new MemoryStore(), keyTable: () => table, limiter })
 * const res = await app.request('/v1/pets', { headers: { Authorization: `Bearer ${token}` } })
 */
export function createApp({
  store,
  keyTable,
  limiter,
  clock = systemClock,
  log = silentLogger,
  clientAddress = UNKNOWN_CLIENT,
  ban,
  docs = {},
  metrics,
  serveMetrics = true,
  whyNotReady,
  maxInFlight,
  hostSlots,
  ipv6Prefix,
  limiterStatus,
  corsOrigins = [],
  keysProblem,
  notify,
  experimental = false,
  orderHoldMs = DEFAULT_ORDER_HOLD_MS,
}: AppOptions) {
  const operations = servedOperations(experimental);
  // A report-only plan or consumer (`"enforce": false`) is admitted over its limit; this logs and
  // counts each such request.
  const wouldRefuse = wouldRefuseReporter({
    log,
    clock,
    ...(metrics ? { count: (consumer, window) => metrics.wouldRefuse(consumer, window) } : {}),
  });
  // The admission check: who calls, the in-flight cap, the rate limit and the key's scope (step 3).
  const admissionCheck = createAdmissionCheck({
    keyTable,
    limiter,
    clientAddress,
    ban,
    maxInFlight,
    hostSlots,
    ipv6Prefix,
    wouldRefuse,
    clock,
    notify,
  });
  const routes = tableRouteHandlers({
    log,
    clock,
    clientAddress,
    admissionCheck,
    deps: { store, clock, orderHoldMs },
    // The same store, typed for step 6 alone: its change count and due orders' expiry.
    changesAndExpiry: store,
    maxBodyBytes: MAX_BODY_BYTES,
    corsOrigins,
    metrics,
    allowedMethods: allowedMethods(API_PREFIX, operations),
    hasValidKey: callerHasValidKey(keyTable, clock),
  });

  const app = new Hono<AppEnv>();
  // One route per operation and service route, so a request matches one handler.
  // `serveUnmatched`, Hono's `notFound` hook, answers the rest. Outside the API prefix: 404. Under
  // it (`serveNoRoute` of src/pipeline/pipeline.ts), in this order: a CORS preflight, the
  // gateway's refusal (401 to a caller without a key), step 5's 413 or 415, then 405 with `Allow`
  // when the path is served with other methods, else 404.
  for (const route of serviceRoutes({
    store,
    keyTable,
    log,
    whyNotReady,
    limiterStatus,
    keysProblem,
    docs: { ...docs, experimental },
    metrics: serveMetrics ? metrics : undefined,
  })) {
    app.get(route.path, routes.serviceRoute(route));
  }
  for (const op of byRouteOrder(operations)) app.on(op.method, API_PREFIX + op.path, routes.handlerFor(op));
  app.notFound(routes.serveUnmatched);
  app.onError(routes.onError);
  return app;
}

/**
 * Returns a lookup of the methods a table serves at a request path under `prefix`, matched as
 * Hono matches routes, or undefined when it serves none: a 405's `Allow`. HEAD, which every GET
 * also serves, is not listed.
 *
 * @example
 * allowedMethods('/v1', servedOperations(false))('/v1/pets/7') // ['GET', 'PATCH', 'DELETE']
 */
function allowedMethods(
  prefix: string,
  table: readonly { readonly path: string; readonly method: string }[],
): (path: string) => readonly string[] | undefined {
  const router = new TrieRouter<string[]>();
  const byPath = new Map<string, string[]>();
  for (const { path, method } of table) {
    const methods = byPath.get(path);
    if (methods) methods.push(method);
    else byPath.set(path, [method]);
  }
  for (const [path, methods] of byPath) router.add(METHOD_NAME_ALL, prefix + path, methods);
  return (path) => {
    // `match()` returns `[[methods, params][]]`, the routes that match `path`: one at most here.
    const [[route]] = router.match(METHOD_NAME_ALL, path);
    if (route === undefined) return undefined;
    const [methods] = route;
    return methods;
  };
}

export interface AdminAppOptions
  extends Pick<
    AppOptions,
    'keyTable' | 'limiter' | 'clock' | 'log' | 'clientAddress' | 'ban' | 'maxInFlight' | 'ipv6Prefix' | 'metrics'
  > {
  /** Where consumers and keys are read and changed: the keys file or the data store. */
  keyAdmin: KeyAdmin;
  /** Called after the admin API deletes a consumer, with the owners its orders are stored under. */
  consumerDeleted?: (owners: readonly string[]) => Promise<void>;
}

/**
 * The app of the `--admin-port` listener: the admin table (src/admin/admin-operations.ts) through
 * the same pipeline as the API. Its own gateway, over the same keys and limiter, lets only a key
 * with the `admin` scope pass; failed attempts count against the client's address.
 *
 * @example
 * const admin = adminApp({ keyAdmin, keyTable: () => table, limiter })
 * adapter.serve({ fetch: admin.fetch, port: 9091, hostname: '127.0.0.1' })
 */
export function adminApp({
  keyAdmin,
  keyTable,
  limiter,
  clock = systemClock,
  log = silentLogger,
  clientAddress = UNKNOWN_CLIENT,
  ban,
  maxInFlight,
  ipv6Prefix,
  metrics,
  consumerDeleted,
}: AdminAppOptions) {
  // The API's admission check, except that every key needs the `admin` scope (`isAdminGateway`),
  // its in-flight cap is the admin port's own (one thread serves it: no `hostSlots`), and it sends
  // no webhook notices nor reports report-only refusals (no `notify`, no `wouldRefuse`).
  const admissionCheck = createAdmissionCheck({
    keyTable,
    limiter,
    clientAddress,
    ban,
    maxInFlight,
    ipv6Prefix,
    clock,
    isAdminGateway: true,
  });
  const routes = tableRouteHandlers<AdminDeps>({
    log,
    clock,
    clientAddress,
    admissionCheck,
    deps: { keyAdmin, clock, ...(consumerDeleted ? { consumerDeleted } : {}) },
    maxBodyBytes: MAX_BODY_BYTES,
    allowedMethods: allowedMethods(ADMIN_PREFIX, ADMIN_OPERATIONS),
    isGatewayPath: (path) => isUnder(ADMIN_PREFIX, path),
    // Every answer of the admin port is counted under one operation of its own, `admin`.
    ...(metrics ? { metrics, countAs: ADMIN_OPERATION_LABEL } : {}),
    hasValidKey: callerHasValidKey(keyTable, clock),
  });
  const app = new Hono<AppEnv>();
  for (const op of byRouteOrder(ADMIN_OPERATIONS)) app.on(op.method, ADMIN_PREFIX + op.path, routes.handlerFor(op));
  app.notFound(routes.serveUnmatched);
  app.onError(routes.onError);
  return app;
}

/** Whether a request's caller holds a key valid now (its `traceparent` may then force a trace). */
function callerHasValidKey(keyTable: () => KeyTable, clock: Clock): (c: Context<AppEnv>) => boolean {
  const valid = validAuthorizationTest(keyTable, clock);
  return (c) => valid(c.req.header('authorization'));
}

/**
 * Builds the app of the `--metrics-port` listener: `/metrics`, and the Error body for anything
 * else. It logs no request unless `log` is given, because a scraper calling every few seconds
 * would drown the API's lines (src/serve/listeners.ts gives none).
 *
 * @example
 * adapter.serve({ fetch: metricsApp(metrics).fetch, port: 9090, hostname: '127.0.0.1' })
 */
export function metricsApp(metrics: Metrics, log: Logger = silentLogger) {
  const routes = serviceRouteHandlers({
    log,
    clock: systemClock,
    clientAddress: UNKNOWN_CLIENT,
    maxBodyBytes: MAX_BODY_BYTES,
  });
  const app = new Hono<AppEnv>();
  const route = metricsRoute(metrics);
  app.get(route.path, routes.serviceRoute(route));
  app.notFound(routes.serveUnmatched);
  app.onError(routes.onError);
  return app;
}
