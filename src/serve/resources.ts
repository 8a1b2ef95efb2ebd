// What start-up opens once and hands the apps: the limiter, the wrapped store, the webhooks, the
// metrics and the traces. A name that starts with a verb (`openLimiter()`, `openServerStore()`,
// `startTraces()`) opens or starts something; a name that ends in `Of` only builds its value. One
// process and the supervisor (src/serve/start.ts) call them; each worker (src/serve/worker.ts)
// calls `openServerStore()`, `metricsOf()` and `notifierOf()` too.
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
 * Opens this process's store, the one the API, the keys, the webhook delivery and the notifier are
 * all given; with `--workers`, the supervisor and each worker make their own. Each of them calls
 * the store through these wrappers, except the key store (`--keys store`), which calls
 * `store.backend` directly (src/store/key-store.ts). The wrappers, from the outside in (this is the
 * one place that puts them together, besides `openStore()`, which adds the innermost, the time
 * bound and the trace, for the CLI's commands too):
 * - with `--workers` above 1 (`shared`), `sharedChangeCount()`: a write of any worker or of the
 *   supervisor that changed something, or failed, moves the change count every worker's memo
 *   reads; a write that changed nothing leaves it;
 * - with metrics, `countStoreErrors()`: failed calls counted;
 * - `boundAndTraced()` (from `openStore()`): each call in a child record of the request's trace
 *   and bounded by `--store-timeout`;
 * - the backend: memory, SQLite or PostgreSQL.
 *
 * The supervisor and each worker (src/serve/worker.ts) call it with `shared`: `state` holds the
 * workers' shared counters (`WORKER_STATE`), and `workers` is how many workers there are.
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
 * Makes the webhooks' `DeliveryLoop` and the gateway's `notify`, none without an outbox: events are
 * recorded in the outbox before the answer and delivered off the request path. It starts nothing:
 * start.ts starts the loop (`DeliveryLoop.start()`) once the app is made. The `DeliveryLoop`
 * calls `openServerStore`'s store, so its failures are counted and each call has a request's
 * time bound. The sends are outside those calls. The bound keeps a stuck connection from holding up
 * shutdown. The delivery loop and the requests share one time bound: once any call finds the
 * database unreachable, the loop's calls and the requests' fail at once.
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
 * Returns the gateway's `notify` over `store`'s outbox, which calls `wake` once a decision's events
 * are recorded; undefined without an outbox. The supervisor's `notify` wakes its own `DeliveryLoop`
 * (`webhooksOf()`); a worker's asks the supervisor to wake it (src/serve/worker.ts).
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
 * Starts the trace export when an endpoint is configured; returns none otherwise, and the export
 * is never loaded. Spans it drops are counted on `/metrics`.
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
