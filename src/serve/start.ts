// Starts the server from the parsed configuration: the runtime's adapter, metrics and traces, the
// listeners (src/serve/listeners.ts), the store, limiter and webhooks (src/serve/resources.ts) and
// the apps. It serves on this thread by default, or with --workers threads
// (src/serve/supervisor.ts). It also runs the shutdown that a signal starts.
import process from 'node:process';
import { type AppOptions, adminApp, createApp } from '../app.ts';
import { type Config, ConfigError, memoryWithWorkers } from '../config.ts';
import { TrustedProxies } from '../core/addresses.ts';
import { systemClock } from '../core/clock.ts';
import { httpOrigin } from '../core/http-origin.ts';
import type { RateLimiter } from '../gateway/gateway.ts';
import { announceDevKey } from '../keys/dev-key.ts';
import { KeysFileError } from '../keys/file.ts';
import { KEYS_STORE, LiveKeys } from '../keys/live-keys.ts';
import { keysFileWriteProblem } from '../keys/locked-file.ts';
import { createLogger, type Logger, logLines } from '../log.ts';
import type { Metrics } from '../metrics/registry.ts';
import { describeData, MEMORY } from '../store/open.ts';
import type { DataStore } from '../store/store.ts';
import { tracesUrl } from '../trace/settings.ts';
import { VERSION } from '../version.ts';
import type { DeliveryLoop } from '../webhooks/delivery-loop.ts';
import type { RunningServer, RuntimeAdapter } from './adapter.ts';
import { availableCpus } from './cpus.ts';
import { checkOpenFiles, openFilesNeeded } from './fd-limit.ts';
import { Listeners } from './listeners.ts';
import { metricsOf, openLimiter, openServerStore, startTraces, webhooksOf } from './resources.ts';
import { handleSignals } from './signals.ts';
import { type HostStatus, type WorkerMemory, WorkerPool, workerMemory } from './supervisor.ts';

/** How often each instance expires the orders whose hold is over and that no request expired. */
const ORDER_SWEEP_MS = 1_000;
/** The minimum time a shutdown gives the trace export to send the queued spans. */
const FLUSH_MIN_MS = 500;

// Set by `bun build --define` in a compiled binary (scripts/lib/build-info.sh), else undeclared.
// `loadAdapter()` reads it here rather than `COMPILED` of src/version.ts because the bundler
// replaces a define only where it is written, and only a constant condition lets it drop the
// unused adapters.
declare const PETSTORE_TARGET: string | undefined;

/**
 * Serves `config` (as checked by `parseConfig`) and resolves once serving; the process then runs
 * until a signal stops it. Throws when the start fails, e.g. on a keys file the admin API cannot
 * write. ARCHITECTURE.md's step S2 lists the steps in order; `listening` is logged last.
 *
 * @example
 * await startServer(parseConfig(process.argv.slice(2), process.env))
 */
export async function startServer(config: Config): Promise<void> {
  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  const adapter = await loadAdapter();
  const workers = workerCount(config, adapter);
  // The memory the workers share: their counters, their in-flight slots (src/serve/supervisor.ts).
  const workersMemory = workers > 1 ? workerMemory(workers) : undefined;
  const sharedCounters = workersMemory && new Int32Array(workersMemory.state);
  const metrics = await metricsOf(config, adapter);
  const traces = await startTraces(config, metrics);
  const liveKeys = new LiveKeys(config.keys, log, metrics);
  // The admin API changes the keys file: a file this process cannot write is refused now, once,
  // not with a 500 at every admin change.
  if (config.adminPort !== null && config.keys && config.keys !== KEYS_STORE) {
    const problem = keysFileWriteProblem(config.keys);
    if (problem) throw new KeysFileError(problem);
  }
  checkOpenFiles(log, openFilesNeeded(liveKeys.consumers, config.maxInFlight));
  const listeners = await Listeners.bind(config, adapter, metrics, { proveOnly: workers > 1 });
  // The store opens after the bind, so a port in use leaves no database file behind. A failed
  // start ends the process (src/main.ts), which frees the ports and the store.
  // With workers, the supervisor's store uses their shared counters, so its own writes (expiries,
  // a deleted consumer's orders) move the change count that every worker reads. `openServerStore()`
  // in src/serve/resources.ts lists the store's wrappers, from the outside in.
  const store = await openServerStore(config, log, metrics, sharedCounters && { state: sharedCounters, workers });
  // Does nothing without `--keys store`.
  await liveKeys.loadFromStore(store);
  // For any source of keys: moves the orders kept under a consumer's name to its id (with
  // `--keys store`, it first stores an id for each stored consumer that has none).
  await liveKeys.settleIdentities(store);
  const { limiter, redisLimiter } = await openLimiter(config, log, metrics);
  const webhooks = webhooksOf(store, config, log, metrics, liveKeys);
  let stopping = false;
  let stoppingAt = 0;
  const hostStatus = (): HostStatus => ({ limiterStatus: redisLimiter?.status(), keysProblem: liveKeys.problem() });
  // `workersMemory` exists only for `--workers` above 1: then the workers serve, else this process.
  if (workersMemory) {
    await startWorkers({
      config,
      memory: workersMemory,
      listeners,
      liveKeys,
      limiter,
      log,
      metrics,
      delivery: webhooks.delivery,
      hostStatus,
    });
  } else {
    serveWithoutWorkers(config, adapter, listeners, {
      store,
      keyTable: () => liveKeys.table,
      limiter,
      log,
      metrics,
      whyNotReady: () => (stopping ? 'The server is shutting down.' : undefined),
      hostStatus,
      notify: webhooks.notify,
    });
  }
  webhooks.delivery?.start();
  const sweepTimer = startDueOrderSweep(store, log);
  const adminServer = await startAdmin({ config, adapter, listeners, liveKeys, limiter, log, metrics, store });
  await liveKeys.start();
  handleSignals({
    log,
    reload: () => liveKeys.reload(),
    servers: listeners.all,
    shutdownSeconds: config.shutdownSeconds,
    onStopping: () => {
      stopping = true;
      stoppingAt = systemClock.now();
      // Cut short the webhook attempts under way now, since Bun's drain also waits for outgoing
      // requests.
      void webhooks.delivery?.stop();
    },
    close: async () => {
      clearInterval(sweepTimer);
      await liveKeys.stop();
      await webhooks.delivery?.stop();
      await store.close();
      await redisLimiter?.close();
      // Send the queued spans within what is left of the grace period, but never less than
      // FLUSH_MIN_MS.
      await traces?.shutdown(Math.max(FLUSH_MIN_MS, stoppingAt + config.shutdownSeconds * 1_000 - systemClock.now()));
    },
  });
  announce({ config, runtime: adapter.name, liveKeys, listeners, adminServer, log, traces: traces?.url, workers });
}

/**
 * Returns the workers `--workers` asks for: `auto` is the CPUs this process may use
 * (`availableCpus`). More than one needs a runtime whose workers share a port and memory: Bun's.
 */
function workerCount(config: Config, adapter: RuntimeAdapter): number {
  const count = config.workers === 'auto' ? availableCpus() : config.workers;
  if (count <= 1) return 1;
  if (adapter.name !== 'bun') {
    throw new ConfigError(
      `--workers ${config.workers}: this runtime (${adapter.name === 'deno' ? 'Deno' : 'Node'}) serves with one worker; ` +
        'the petstore binary (Bun) serves with several on one port',
    );
  }
  if (config.data === MEMORY) throw new ConfigError(memoryWithWorkers(count));
  if (tracesUrl(config.otelTracesEndpoint, config.otelEndpoint) !== undefined) {
    // The workers' spans would each need the host's one exporter: not built; never a silent loss.
    throw new ConfigError(
      `--workers ${config.workers}: traces (OTEL_EXPORTER_OTLP_ENDPOINT) are exported with one worker only; ` +
        'serve with --workers 1 to export them',
    );
  }
  return count;
}

/** Serves the API without workers, on this thread: one app (`createApp()`) answers its port. */
function serveWithoutWorkers(
  config: Config,
  adapter: RuntimeAdapter,
  listeners: Listeners,
  resources: AppResources,
): void {
  listeners.answerWith(createApp(appOptionsOf(config, adapter, resources)).fetch);
}

/**
 * Serves the admin API (`adminApp()`) on `--admin-port` when it is given and the keys can be
 * changed (`--keys`), and returns its server; else returns undefined.
 */
async function startAdmin({
  config,
  adapter,
  listeners,
  liveKeys,
  limiter,
  log,
  metrics,
  store,
}: {
  config: Config;
  adapter: RuntimeAdapter;
  listeners: Listeners;
  liveKeys: LiveKeys;
  limiter: RateLimiter;
  log: Logger;
  metrics: Metrics | undefined;
  store: DataStore;
}): Promise<RunningServer | undefined> {
  if (!liveKeys.keyAdmin || config.adminPort === null) return undefined;
  const app = adminApp({
    keyTable: () => liveKeys.table,
    limiter,
    log,
    ...gatewayFlags(config, adapter),
    keyAdmin: liveKeys.keyAdmin,
    ...(metrics ? { metrics } : {}),
    // When the admin API deletes a consumer, every owner its orders are stored under is
    // retired: its placed orders are cancelled and their pets are available again.
    consumerDeleted: async (owners) => {
      for (const owner of owners) await store.retireOwner(owner);
    },
  });
  return listeners.add(app.fetch, config.adminPort, config.adminHost);
}

/**
 * Starts the workers on the port the supervisor checked is free, and resolves once all of them
 * listen. They share the supervisor's limiter and keys. If a worker cannot be replaced, the
 * process shuts down as on SIGTERM rather than serve with fewer workers than it reports.
 */
async function startWorkers({
  config,
  memory,
  listeners,
  liveKeys,
  limiter,
  log,
  metrics,
  delivery,
  hostStatus,
}: {
  config: Config;
  memory: WorkerMemory;
  listeners: Listeners;
  liveKeys: LiveKeys;
  limiter: RateLimiter;
  log: Logger;
  metrics: Metrics | undefined;
  /** The webhook delivery, woken when a worker records an event. */
  delivery: DeliveryLoop | undefined;
  /** The host's part of `/readyz`, which the workers are sent. */
  hostStatus: () => HostStatus;
}): Promise<void> {
  const pool = await WorkerPool.start({
    count: memory.slots.workers,
    config,
    port: listeners.main.port,
    memory,
    keyTable: () => liveKeys.table,
    limiter,
    log,
    lines: logLines(),
    // Sent to the workers every STATUS_EVERY_MS for their `/readyz`: the Redis limiter's state and
    // the stored keys' problem, both undefined without `--redis` and `--keys store`.
    ...(config.redis || config.keys === KEYS_STORE ? { hostStatus } : {}),
    wake: () => delivery?.wake(),
    ...(metrics ? { metrics } : {}),
    lost: (reason) => {
      log.error('stopping: the process would serve with fewer workers than it says', { reason });
      // Drain as on SIGTERM, then exit 1 so that the service manager (systemd, the orchestrator)
      // restarts the process.
      process.exitCode = 1;
      process.kill(process.pid, 'SIGTERM');
    },
  });
  liveKeys.onChange((table) => pool.keysChanged(table));
  listeners.addWorkerPool(pool);
}

/**
 * Every ORDER_SWEEP_MS, expires the placed orders whose hold is over (`expireDueOrders`). Requests
 * expire the orders they read; this sweep catches the rest, so their pets become available and
 * their webhooks fire. Each expiry is a conditional write, so several instances sweeping at once
 * expire each order only once.
 */
function startDueOrderSweep(store: DataStore, log: Logger): ReturnType<typeof setInterval> {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    store
      .expireDueOrders(systemClock.now())
      .catch((err: unknown) => log.warn('order expiry failed; retried in a second', { error: String(err) }))
      .finally(() => {
        running = false;
      });
  }, ORDER_SWEEP_MS);
  timer.unref?.();
  return timer;
}

/** Loads the runtime's adapter: Bun's in the binary and under Bun, else Deno's or Node's. */
async function loadAdapter(): Promise<RuntimeAdapter> {
  // A compiled binary always runs on Bun: the define makes this condition a constant there, so the
  // bundler leaves the other adapters (and @hono/node-server) out of the binary.
  const { adapter } = await (typeof PETSTORE_TARGET === 'string' || 'Bun' in globalThis
    ? import('./bun.ts')
    : 'Deno' in globalThis
      ? import('./deno.ts')
      : import('./node.ts'));
  return adapter;
}

/**
 * Returns the gateway options set by flags: how to find the client's address, the ban, the
 * in-flight cap and the IPv6 grouping. Both the API app (`appOptionsOf`) and the admin app use it.
 */
function gatewayFlags(config: Config, adapter: RuntimeAdapter) {
  const trust = new TrustedProxies(config.trustProxy);
  return {
    clientAddress: (c) => trust.clientAddress(adapter.peerAddress(c), c.req.header('x-forwarded-for')),
    ban: { seconds: config.banSeconds, ...(config.banThreshold > 0 ? { threshold: config.banThreshold } : {}) },
    maxInFlight: config.maxInFlight,
    ipv6Prefix: config.ipv6Prefix,
  } satisfies Partial<AppOptions>;
}

/**
 * The API app's options that do not come from flags: the resources the caller of
 * `appOptionsOf()` has opened, and, in a worker, the host's in-flight slots (`hostSlots`).
 */
export type AppResources = Pick<
  AppOptions,
  'store' | 'keyTable' | 'limiter' | 'log' | 'metrics' | 'whyNotReady' | 'notify' | 'hostSlots'
> & {
  /** The host's part of `/readyz`; undefined in a worker the supervisor sends none. */
  hostStatus: () => HostStatus | undefined;
};

/**
 * Returns the API app's options, from the flags and the caller's `AppResources`. Both start-up
 * without workers and each worker (src/serve/worker.ts) call it, so an option added here reaches
 * both.
 *
 * @example
 * const app = createApp(
 *   appOptionsOf(config, adapter, { store, keyTable, limiter, log, metrics, whyNotReady, hostStatus }),
 * );
 */
export function appOptionsOf(
  config: Config,
  adapter: RuntimeAdapter,
  { hostStatus, ...rest }: AppResources,
): AppOptions {
  return {
    ...rest,
    ...gatewayFlags(config, adapter),
    docs: { publicUrl: config.publicUrl, stagingUrl: config.stagingUrl },
    serveMetrics: config.metricsPort === null,
    corsOrigins: config.corsOrigins,
    experimental: config.experimental,
    orderHoldMs: config.orderHoldMs,
    limiterStatus: () => hostStatus()?.limiterStatus,
    keysProblem: () => hostStatus()?.keysProblem,
  };
}

/**
 * Shows the development key (if any), then logs `listening`. This comes last because a script
 * that waits for that line may send a signal at once.
 */
function announce({
  config,
  runtime,
  liveKeys,
  listeners,
  adminServer,
  log,
  traces,
  workers,
}: {
  config: Config;
  runtime: string;
  liveKeys: LiveKeys;
  listeners: Listeners;
  adminServer: RunningServer | undefined;
  log: Logger;
  /** The OTLP endpoint traces go to, if any. */
  traces: string | undefined;
  workers: number;
}): void {
  if (liveKeys.devToken) announceDevKey(liveKeys.devToken, reachableOrigin(config.host, listeners.main.port), log);
  log.info('listening', {
    version: VERSION,
    runtime,
    ...(workers > 1 ? { workers } : {}),
    address: httpOrigin(config.host, listeners.main.port),
    data: describeData(config.data),
    keysByPlan: liveKeys.table.countByPlan(),
    ...(traces ? { traces } : {}),
    ...(listeners.metrics ? { metrics: `${httpOrigin(config.host, listeners.metrics.port)}/metrics` } : {}),
    ...(adminServer ? { admin: `${httpOrigin(config.adminHost, adminServer.port)}/admin/v1` } : {}),
  });
}

/**
 * Returns a URL a person can open for `host:port`, with localhost for a wildcard host. The
 * development key's banner uses it to show where to send a request; `listening` shows the bind.
 */
function reachableOrigin(host: string, port: number): string {
  return httpOrigin(host === '' || host === '0.0.0.0' || host === '::' ? 'localhost' : host, port);
}
