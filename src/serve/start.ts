// Serving. From the parsed configuration, this file starts the runtime's adapter, makes the
// metrics and the traces, binds the listeners (src/serve/listeners.ts), opens the store, the
// limiter and the webhooks (src/serve/resources.ts), and builds the apps. It serves without
// workers (the default), on this thread, or with --workers threads (src/serve/supervisor.ts). It
// also runs the shutdown that a signal starts.
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

// Defined by `bun build --define` for a compiled binary (scripts/lib/build-info.sh), else
// undeclared. `loadAdapter()` reads it here, not as `COMPILED` of src/version.ts: the bundler
// folds a define only where it is written, and only a folded condition leaves out the adapters.
declare const PETSTORE_TARGET: string | undefined;

/**
 * Serves `config` (checked whole by `parseConfig`): makes the metrics and the traces, reads the
 * keys (a keys file the admin API cannot write stops the start), binds the ports, opens the store
 * (and reads the keys kept there, with `--keys store`), builds the limiter, the webhooks and the
 * apps, installs the signal handlers, and only then shows the development key (if any) and logs
 * `listening`. Resolves once serving; the process then runs until a signal stops it.
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
  // The workers' shared counters (`WORKER_STATE` of src/serve/supervisor.ts), over their memory.
  const sharedCounters = workersMemory && new Int32Array(workersMemory.state);
  // The store opens after the bind, so a port in use leaves no database file behind. A failed
  // start ends the process (src/main.ts), which frees the ports and the store.
  // With workers, the supervisor's store shares their counters: its own writes (expiries, a
  // consumer's orders retired) move the change count every worker reads. `openServerStore()` in
  // src/serve/resources.ts lists the store's wrappers, from the outside in.
  const store = await openServerStore(config, log, metrics, sharedCounters && { state: sharedCounters, workers });
  // Does nothing without `--keys store`.
  await liveKeys.loadFromStore(store);
  // Whatever the keys' source: moves the orders kept under a consumer's name to its id (with
  // `--keys store`, after storing an id for each stored consumer without one).
  await liveKeys.settleIdentities(store);
  const { limiter, redisLimiter } = await openLimiter(config, log, metrics);
  const webhooks = webhooksOf(store, config, log, metrics, liveKeys);
  let stopping = false;
  let stoppingAt = 0;
  // The host's part of `/readyz`.
  const hostStatus = (): HostStatus => ({ limiterStatus: redisLimiter?.status(), keysProblem: liveKeys.problem() });
  // `workersMemory` is made for `--workers` above 1 only, so it stands for "with workers": then
  // workers serve, else this process.
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
      stoppingAt = Date.now();
      // Attempts under way are cut short now: Bun's drain waits for the outgoing ones too.
      void webhooks.delivery?.stop();
    },
    close: async () => {
      clearInterval(sweepTimer);
      await liveKeys.stop();
      await webhooks.delivery?.stop();
      await store.close();
      await redisLimiter?.close();
      // What is queued is sent within what is left of the grace period (half a second at least).
      await traces?.shutdown(Math.max(FLUSH_MIN_MS, stoppingAt + config.shutdownSeconds * 1_000 - Date.now()));
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
 * Starts the workers on the port the supervisor proved free. Each serves the API with the host's
 * one limiter and keys, which the supervisor holds; they serve from when all of them listen. A
 * worker lost for good stops the process (SIGTERM's drain), never serving on with fewer than it
 * says. The pool is told of each change of the keys. It joins the listeners, which drain it
 * first on shutdown.
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
      // Drained as on SIGTERM, then exit 1: the service manager (systemd, the orchestrator)
      // restarts it.
      process.exitCode = 1;
      process.kill(process.pid, 'SIGTERM');
    },
  });
  liveKeys.onChange((table) => pool.keysChanged(table));
  listeners.addWorkerPool(pool);
}

/** How often each instance expires the orders whose hold is over, when no request did first. */
const ORDER_SWEEP_MS = 1_000;

/**
 * Expires, every second, the placed orders whose hold is over (`expireDueOrders`). A request
 * expires the orders it meets; this expires those nobody asks about, so their pets are available
 * again and their owners' webhooks hear of it. Each expiry is a conditional write, so instances
 * sweeping together expire each order once.
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
  // A compiled binary is always Bun: there the define makes this a constant, and the bundler
  // leaves the other adapters (and @hono/node-server) out of the binary.
  const { adapter } = await (typeof PETSTORE_TARGET === 'string' || 'Bun' in globalThis
    ? import('./bun.ts')
    : 'Deno' in globalThis
      ? import('./deno.ts')
      : import('./node.ts'));
  return adapter;
}

/** The least time a shutdown gives the trace export to send what is queued. */
const FLUSH_MIN_MS = 500;

/**
 * Returns the gateway's options that come from flags: how to find the client's address, the ban,
 * the in-flight cap and the IPv6 grouping. The API's app (`appOptionsOf`) and the admin API's take
 * them from here alike.
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
 * What the caller of `appOptionsOf()` hands the API app: its store, keys, limiter, log, metrics,
 * webhooks' `notify` and, in a worker, the host's in-flight slots (`hostSlots`), with why `/readyz`
 * should fail (`whyNotReady`) and the host's part of `/readyz` (`hostStatus`: the Redis limiter's
 * state, the key store's problem).
 */
export type AppResources = Pick<
  AppOptions,
  'store' | 'keyTable' | 'limiter' | 'log' | 'metrics' | 'whyNotReady' | 'notify' | 'hostSlots'
> & {
  /** The host's part of `/readyz`; undefined in a worker the supervisor sends none. */
  hostStatus: () => HostStatus | undefined;
};

/**
 * Returns the API app's options; this is the one place they are put together: start-up without
 * workers (`startServer()`) and each worker (src/serve/worker.ts) call it, so an option added here
 * reaches both. The flags give most of them; the caller gives the rest (`AppResources`).
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
 * Shows the development key (if any), then logs `listening`: last, since whoever waits for
 * that line may signal at once.
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
 * Returns an address a person can open for `host:port`, a wildcard bind's being localhost: the
 * development key's banner shows where to send a request, the `listening` line what is bound.
 */
function reachableOrigin(host: string, port: number): string {
  return httpOrigin(host === '' || host === '0.0.0.0' || host === '::' ? 'localhost' : host, port);
}
