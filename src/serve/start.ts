import process from 'node:process';
import { type AdminAppOptions, adminApp, createApp, metricsApp } from '../app.ts';
import { type Config, ConfigError } from '../config.ts';
import { systemClock } from '../core/clock.ts';
import {
  type LeaseStats,
  type LimiterEvent,
  openRedisLimiter,
  SlidingWindowLimiter,
  TrustedProxies,
} from '../gateway/index.ts';

import type { KeyRecord } from '../keys/file.ts';
import { fileKeyAdmin, type KeyAdmin, storeKeyAdmin } from '../keys/source.ts';
import { KeyTable } from '../keys/table.ts';
import { createLogger } from '../log.ts';
import { type KeyStore, keyStoreOf } from '../store/keys.ts';
import { describeData, MEMORY, openStore } from '../store/open.ts';
import type { PetStore } from '../store/store.ts';
import { VERSION } from '../version.ts';
import { notifier } from '../webhooks/notify.ts';
import { parseRetrySeconds } from '../webhooks/schedule.ts';
import { DeliveryWorker } from '../webhooks/worker.ts';
import { checkOpenFiles, openFilesNeeded } from './fd-limit.ts';
import { announceDevKey, developmentKeys, KeysFileWatcher, type StartKeys } from './keys-source.ts';
import { KEYS_STORE, KeysStoreWatcher } from './keys-store.ts';
import type { RunningServer, RuntimeAdapter, ServeOptions } from './server.ts';
import { handleSignals } from './signals.ts';

// Defined by `bun build --define` for a compiled binary (scripts/lib/build-info.sh), else undeclared.
declare const PETSTORE_TARGET: string | undefined;

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

function trustedProxies(cidrs: readonly string[]): TrustedProxies {
  try {
    return new TrustedProxies(cidrs);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/** The address to show a person for `host:port`: a wildcard bind is reached on localhost. */
function origin(host: string, port: number): string {
  const name = host === '' || host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}`;
}

/** The retry delays `PETSTORE_WEBHOOK_RETRY_SECONDS` sets (for tests), or undefined for the real schedule. */
function webhookRetryDelays(text: string | undefined): number[] | undefined {
  if (text === undefined || text === '') return undefined;
  try {
    return parseRetrySeconds(text);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/**
 * Serves `config`: loads the keys, binds the port, opens the store, builds the limiter and the
 * app, installs the signal handlers, and only then shows the development key (if any) and logs
 * `listening`. Resolves once serving; the process then runs until a signal stops it.
 *
 * @example
 * await startServer(parseConfig(process.argv.slice(2), process.env))
 */
export async function startServer(config: Config): Promise<void> {
  if (config.adminPort !== null && !config.keys) {
    throw new ConfigError(
      '--admin-port: needs --keys FILE or --keys store, where the admin API keeps consumers and keys',
    );
  }
  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  const trust = trustedProxies(config.trustProxy);
  const retryDelays = webhookRetryDelays(process.env.PETSTORE_WEBHOOK_RETRY_SECONDS);
  const fromStore = config.keys === KEYS_STORE;
  const source = fromStore ? { source: 'store' } : { file: config.keys };
  const applyKeys = (loaded: KeyRecord[], trigger: string) => {
    keys = new KeyTable(loaded);
    const keysByPlan = keys.countByPlan();
    metrics?.reloaded(true);
    metrics?.keysLoaded(keysByPlan);
    metrics?.consumers.load(keys.records());
    log.info('keys reloaded', { ...source, trigger, keysByPlan });
  };
  const refuseKeys = (err: Error, trigger: string) => {
    metrics?.reloaded(false);
    log.error('keys reload failed; keeping the previous keys', { ...source, trigger, error: err.message });
  };
  // The keys file is watched: a change is in force within a second, without SIGHUP.
  const watcher =
    config.keys && !fromStore
      ? new KeysFileWatcher({ path: config.keys, log, apply: applyKeys, refuse: refuseKeys })
      : undefined;
  // With --keys store the keys are read once the store is open.
  const { records, devToken }: StartKeys = watcher
    ? { records: watcher.load() }
    : fromStore
      ? { records: [] }
      : developmentKeys();
  let keys = new KeyTable(records);
  checkOpenFiles(log, openFilesNeeded(new Set(records.map((r) => r.consumer.name)).size, config.maxInFlight));
  if (config.idleTimeoutSeconds <= config.storeTimeoutSeconds) {
    // A request with a body keeps the idle timer, which cuts off a client that stops sending
    // it; once the body is in, the timer must outlast the request's wait for the store.
    throw new ConfigError(
      `--idle-timeout (${config.idleTimeoutSeconds}) must be longer than --store-timeout (${config.storeTimeoutSeconds}), ` +
        'or a connection could be closed while its request waits for the store',
    );
  }
  const adapter = await loadAdapter();
  // prom-client is loaded only with metrics on: it was most of the binary's start-up.
  const metrics =
    config.metrics || config.metricsPort !== null
      ? new (await import('../metrics/registry.ts')).Metrics({
          version: VERSION,
          runtime: adapter.name,
          latencyObjectives: config.latencyObjectives,
        })
      : undefined;
  metrics?.keysLoaded(keys.countByPlan());
  metrics?.consumers.load(keys.records());
  // The ports are bound before the store opens, so a port in use leaves no new database file
  // behind; a request that arrives meanwhile waits for the app.
  let appReady: (fetch: ServeOptions['fetch']) => void = () => {};
  const ready = new Promise<ServeOptions['fetch']>((resolve) => {
    appReady = resolve;
  });
  let handle: ServeOptions['fetch'] = (req, env) => ready.then((fetch) => fetch(req, env));
  const server = await adapter.serve({
    fetch: (req, env) => handle(req, env),
    port: config.port,
    hostname: config.host,
    headerTimeoutSeconds: config.headerTimeoutSeconds,
    idleTimeoutSeconds: config.idleTimeoutSeconds,
  });
  const servers: RunningServer[] = [server];
  const metricsServer =
    metrics && config.metricsPort !== null
      ? await adapter.serve({ fetch: metricsApp(metrics).fetch, port: config.metricsPort, hostname: config.host })
      : undefined;
  if (metricsServer) servers.push(metricsServer);
  if (fromStore && config.data === MEMORY) {
    await Promise.all(servers.map((s) => s.stop(true)));
    throw new ConfigError(`--keys store: needs --data with a SQLite file or a postgres:// URL, not ${config.data}`);
  }
  const store = await openStore(config.data, log, { timeoutMs: config.storeTimeoutSeconds * 1_000 }).catch(
    async (err: unknown) => {
      await Promise.all(servers.map((s) => s.stop(true)));
      throw err;
    },
  );
  // With --keys store, the store's keys: in memory, brought up to date on each change.
  const storeKeys = fromStore ? storeKeysOf(store, config.data) : undefined;
  const storeWatcher = storeKeys
    ? new KeysStoreWatcher({ store: storeKeys, log, apply: applyKeys, refuse: refuseKeys })
    : undefined;
  if (storeWatcher) {
    const loaded = await storeWatcher.load().catch(async (err: unknown) => {
      await Promise.all(servers.map((s) => s.stop(true)));
      await store.close();
      throw err;
    });
    keys = new KeyTable(loaded);
    metrics?.keysLoaded(keys.countByPlan());
    metrics?.consumers.load(keys.records());
  }
  const onEvent = (e: LimiterEvent) => {
    if (e.type === 'ban_end') return log.warn('ban ended', { subject: e.subject.label, plan: e.subject.plan });
    metrics?.banned(e.subject.plan);
    log.warn('ban started', {
      subject: e.subject.label,
      plan: e.subject.plan,
      until: new Date(e.until).toISOString(),
    });
  };
  const local = new SlidingWindowLimiter({ clock: systemClock, onEvent });
  // ioredis is loaded only with --redis, like the PostgreSQL client with a postgres:// --data.
  const shared = config.redis
    ? await openRedisLimiter({
        url: config.redis,
        mode: config.redisFail,
        fallback: local,
        log,
        onEvent,
        ...(metrics ? { leaseStats: (read: () => LeaseStats) => metrics.leases.watch(read) } : {}),
      })
    : undefined;
  const limiter = shared ?? local;
  metrics?.watchLimiter({
    backend: () => (shared ? shared.status().backend : 'memory'),
    ...(shared ? { outages: () => shared.status().outages } : {}),
    table: local,
  });
  // Webhook events live in the store's outbox; the worker delivers them off the request path.
  const { outbox } = store;
  const worker = outbox
    ? new DeliveryWorker({
        outbox,
        keys: () => keys.records(),
        log,
        maxOutbox: config.webhookOutboxMax,
        ...(metrics ? { report: metrics.webhooks } : {}),
        ...(retryDelays ? { delays: retryDelays } : {}),
      })
    : undefined;
  let stopping = false;
  const app = createApp({
    store,
    keys: () => keys,
    limiter,
    log,
    clientAddress: (c) => trust.clientAddress(adapter.peerAddress(c), c.req.header('x-forwarded-for')),
    ban: { seconds: config.banSeconds, ...(config.banThreshold > 0 ? { threshold: config.banThreshold } : {}) },
    docs: { publicUrl: config.publicUrl, stagingUrl: config.stagingUrl },
    metrics,
    serveMetrics: config.metricsPort === null,
    notReady: () => (stopping ? 'The server is shutting down.' : undefined),
    maxInFlight: config.maxInFlight,
    ipv6Prefix: config.ipv6Prefix,
    ...(shared ? { limiterStatus: () => shared.status() } : {}),
    ...(storeWatcher ? { keysProblem: () => storeWatcher.problem() } : {}),
    corsOrigins: config.corsOrigins,
    ...(outbox ? { notify: notifier({ outbox, log, clock: systemClock, recorded: () => worker?.wake() }) } : {}),
  });
  handle = app.fetch;
  worker?.start();
  appReady(app.fetch);
  const admin = watcher
    ? fileKeyAdmin(config.keys, () => watcher.reload('admin API'))
    : storeKeys && storeWatcher
      ? storeKeyAdmin(storeKeys, () => storeWatcher.sync('admin API'))
      : undefined;
  const adminServer = await serveAdmin(
    config,
    admin,
    {
      keys: () => keys,
      limiter,
      log,
      clientAddress: (c) => trust.clientAddress(adapter.peerAddress(c), c.req.header('x-forwarded-for')),
      ban: { seconds: config.banSeconds, ...(config.banThreshold > 0 ? { threshold: config.banThreshold } : {}) },
      maxInFlight: config.maxInFlight,
      ipv6Prefix: config.ipv6Prefix,
    },
    adapter,
  );
  if (adminServer) servers.push(adminServer);

  const reload = () => {
    if (watcher) watcher.reload('SIGHUP');
    else if (storeWatcher) void storeWatcher.sync('SIGHUP');
    else log.warn('SIGHUP: no keys file to reload (started without --keys)');
  };
  watcher?.start();
  await storeWatcher?.start();
  handleSignals({
    log,
    reload,
    servers,
    shutdownSeconds: config.shutdownSeconds,
    onStopping: () => {
      stopping = true;
      // Attempts under way are cut short now: Bun's drain waits for the outgoing ones too.
      void worker?.stop();
    },
    close: async () => {
      watcher?.stop();
      await storeWatcher?.stop();
      await worker?.stop();
      await store.close();
      await shared?.close();
    },
  });

  if (devToken) announceDevKey(devToken, origin(config.host, server.port), log);
  // Last: whoever waits for this line may signal at once.
  log.info('listening', {
    version: VERSION,
    runtime: adapter.name,
    address: `http://${config.host}:${server.port}`,
    data: describeData(config.data),
    keysByPlan: keys.countByPlan(),
    ...(metricsServer ? { metrics: `http://${config.host}:${metricsServer.port}/metrics` } : {}),
    ...(adminServer ? { admin: `http://${config.adminHost}:${adminServer.port}/admin/v1` } : {}),
  });
}

/**
 * The admin API's listener on `--admin-port` of `--admin-host`, over the keys file or the store;
 * none without `--admin-port`.
 */
async function serveAdmin(
  config: Config,
  admin: KeyAdmin | undefined,
  options: Omit<AdminAppOptions, 'admin'>,
  adapter: RuntimeAdapter,
): Promise<RunningServer | undefined> {
  if (config.adminPort === null || !admin) return undefined;
  const app = adminApp({ ...options, admin });
  return adapter.serve({ fetch: app.fetch, port: config.adminPort, hostname: config.adminHost });
}

/**
 * The store's keys for `--keys store` (behind the store's timeout wrapper, its backend's); a
 * store that keeps none (`:memory:`) is a configuration error.
 */
function storeKeysOf(store: PetStore, data: string): KeyStore {
  const keys = keyStoreOf(store);
  if (keys) return keys;
  throw new ConfigError(`--keys store: needs --data with a SQLite file or a postgres:// URL, not ${data}`);
}
