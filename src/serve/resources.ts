// The resources start-up opens once and hands to the apps: the limiter, the wrapped store, the
// webhooks, the metrics and the traces. A function whose name starts with a verb (`openLimiter()`,
// `startTraces()`) opens or starts something; one whose name ends in `Of` only builds a value.
// src/serve/start.ts calls them; each worker (src/serve/worker.ts) also calls `openServerStore()`,
// `metricsOf()` and `notifierOf()`.
import type { Config } from '../config.ts';
import { systemClock } from '../core/clock.ts';
import {
  type LeaseStats,
  type LimiterEvent,
  loadRedisLimiter,
  type RateLimiter,
  SlidingWindowLimiter,
} from '../gateway/gateway.ts';
import type { LiveKeys } from '../keys/live-keys.ts';
import { AllowedRanges } from '../keys/webhook-targets.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics/registry.ts';
import { countStoreErrors } from '../metrics/store-errors.ts';
import { openStore } from '../store/open.ts';
import type { DataStore, WrappedStore } from '../store/store.ts';
import { sharedChangeCount } from '../store/wrappers/shared-change-count.ts';
import { tracesUrl } from '../trace/settings.ts';
import { VERSION } from '../version.ts';
import { DeliveryLoop } from '../webhooks/delivery-loop.ts';
import { notifier } from '../webhooks/notify.ts';
import { PUBLIC_TARGETS } from '../webhooks/sender.ts';
import type { RuntimeAdapter } from './adapter.ts';
import { poolShare, WORKER_STATE } from './supervisor.ts';

/**
 * Opens the in-process limiter, or the Redis one with it as the fallback (`--redis`). A ban's start
 * is logged and counted by plan (`metrics.banned`); its end is only logged.
 */
export async function openLimiter(config: Config, log: Logger, metrics: Metrics | undefined) {
  const onEvent = (e: LimiterEvent) => {
    if (e.type === 'ban_end') return log.warn('ban ended', { subject: e.subject.label, plan: e.subject.plan });
    metrics?.banned(e.subject.plan);
    log.warn('ban started', { subject: e.subject.label, plan: e.subject.plan, until: new Date(e.until).toISOString() });
  };
  const local = new SlidingWindowLimiter({ clock: systemClock, onEvent });
  // ioredis is loaded only with --redis, like the PostgreSQL client with a postgres:// --data.
  const redisLimiter = config.redis
    ? await loadRedisLimiter({
        url: config.redis,
        mode: config.redisFail,
        fallback: local,
        log,
        onEvent,
        ...(metrics ? { leaseStats: (read: () => LeaseStats) => metrics.leases.watch(read) } : {}),
      })
    : undefined;
  const limiter: RateLimiter = redisLimiter ?? local;
  metrics?.watchLimiter({
    backend: () => (redisLimiter ? redisLimiter.status().backend : 'memory'),
    ...(redisLimiter
      ? { outages: () => redisLimiter.status().outages, localDecisions: () => redisLimiter.status().localDecisions }
      : {}),
    table: local,
  });
  return { limiter, redisLimiter };
}

/**
 * Opens this process's store, which the API, the keys, the webhook delivery and the notifier all
 * use; with `--workers`, the supervisor and each worker open their own and pass `shared` (the
 * workers' counters, `WORKER_STATE`, and the worker count). All callers go through the wrappers
 * below, except the key store (`--keys store`), which calls `store.backend` directly
 * (src/store/key-store.ts). The wrappers are put together only here and in `openStore()`, which
 * adds the innermost one for the CLI too. From the outside in:
 * - with `shared`, `sharedChangeCount()`: a write by any worker or the supervisor that changed
 *   something, or failed, bumps the change count that every worker's memo reads; a write that
 *   changed nothing does not;
 * - with metrics, `countStoreErrors()`: counts failed calls;
 * - `boundAndTraced()` (from `openStore()`): records each call as a child span of the request's
 *   trace and bounds it by `--store-timeout`;
 * - the backend: memory, SQLite or PostgreSQL.
 */
export async function openServerStore(
  config: Config,
  log: Logger,
  metrics: Metrics | undefined,
  shared?: { readonly state: Int32Array; readonly workers: number },
): Promise<WrappedStore> {
  const store = await openStore(config.data, log, {
    timeoutMs: config.storeTimeoutSeconds * 1_000,
    ...(shared
      ? {
          poolSize: poolShare(shared.workers),
          lockReleases: { counter: shared.state, index: WORKER_STATE.lockReleases },
        }
      : {}),
  });
  const counted = metrics ? countStoreErrors(store, metrics) : store;
  return shared ? sharedChangeCount(counted, shared.state, WORKER_STATE.storeChanges) : counted;
}

/**
 * Makes the webhooks' `DeliveryLoop` and the gateway's `notify`, or neither when the store has no
 * outbox. Events are recorded in the outbox before the answer and delivered off the request path.
 * Starts nothing: start.ts starts the loop once the app is made. The loop uses the wrapped store,
 * so its store calls are counted and time-bounded like a request's (the HTTP sends are not store
 * calls); the bound keeps a stuck connection from holding up shutdown. Because the loop and the
 * requests share one time bound, once any call finds the database unreachable, both fail at once.
 */
export function webhooksOf(
  store: DataStore,
  config: Config,
  log: Logger,
  metrics: Metrics | undefined,
  keys: LiveKeys,
) {
  const { outbox } = store;
  if (!outbox) return {};
  const delivery = new DeliveryLoop({
    outbox,
    keys: () => keys.table.records(),
    log,
    maxOutbox: config.webhookOutboxMax,
    targets: { ...PUBLIC_TARGETS, allowed: new AllowedRanges(config.webhookAllowCidr) },
    ...(metrics ? { report: metrics.webhooks } : {}),
    ...(config.webhookRetryDelays ? { delays: config.webhookRetryDelays } : {}),
  });
  return { delivery, notify: notifierOf(store, log, () => delivery.wake()) };
}

/**
 * Returns the gateway's `notify`, which records events in `store`'s outbox and then calls `wake`;
 * undefined without an outbox. In the supervisor, `wake` wakes its own `DeliveryLoop`; in a
 * worker, it asks the supervisor to (src/serve/worker.ts).
 */
export function notifierOf(store: DataStore, log: Logger, wake: () => void) {
  return store.outbox && notifier({ outbox: store.outbox, log, clock: systemClock, recorded: wake });
}

/**
 * Returns the metrics registry with `--metrics` or `--metrics-port`; prom-client is loaded only
 * then (it is slow to load). It starts nothing: the registry is read when `/metrics` is scraped.
 */
export async function metricsOf(config: Config, adapter: RuntimeAdapter): Promise<Metrics | undefined> {
  if (!config.metrics && config.metricsPort === null) return undefined;
  const { Metrics } = await import('../metrics/registry.ts');
  return new Metrics({ version: VERSION, runtime: adapter.name, latencyObjectives: config.latencyObjectives });
}

/**
 * Starts the trace export when an endpoint is configured, else returns undefined without loading
 * the export code. Dropped spans are counted on `/metrics`.
 */
export async function startTraces(config: Config, metrics: Metrics | undefined) {
  const url = tracesUrl(config.otelTracesEndpoint, config.otelEndpoint);
  if (url === undefined) return undefined;
  const { startTraceExport } = await import('../trace/export.ts');
  const exported = startTraceExport({
    url,
    headers: config.otelHeaders,
    serviceName: config.otelServiceName,
    resourceAttributes: config.otelResourceAttributes,
    sampler: config.otelSampler,
    samplerArg: config.otelSamplerArg,
    keep: {
      slowerThanMs: 1000 * (config.otelKeepSlowerThan ?? Math.max(...config.latencyObjectives)),
      errors: config.otelKeepErrors,
      maxPerSecond: config.otelKeepMaxPerSecond,
    },
    ringRecords: config.otelRingRecords,
    ...(metrics ? { dropped: (spans: number, reason: string) => metrics.spansDropped(spans, reason) } : {}),
  });
  return { url, shutdown: exported.shutdown };
}
