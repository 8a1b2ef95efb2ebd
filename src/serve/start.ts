import { createApp } from '../app.ts';
import { systemClock } from '../clock.ts';
import { type Config, ConfigError } from '../config.ts';
import { TrustedProxies } from '../gateway/addresses.ts';
import { KeyTable } from '../gateway/keys/table.ts';
import type { LimiterEvent } from '../gateway/limiter/limiter.ts';
import { SlidingWindowLimiter } from '../gateway/limiter/memory.ts';
import { createLogger } from '../log.ts';
import { metricsApp } from '../routes/metrics.ts';
import { describeData, openStore } from '../store/open.ts';
import { VERSION } from '../version.ts';
import { checkOpenFiles } from './fd-limit.ts';
import { loadKeys, readKeysFile } from './keys-source.ts';
import type { RuntimeAdapter } from './server.ts';
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

/**
 * Serves `config`: loads the keys, opens the store, builds the limiter and the app, listens,
 * installs the signal handlers and logs `listening` last. Resolves once listening; the process
 * then runs until a signal stops it.
 *
 * @example
 * await startServer(parseConfig(process.argv.slice(2), process.env))
 */
export async function startServer(config: Config): Promise<void> {
  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  checkOpenFiles(log);
  const trust = trustedProxies(config.trustProxy);
  let keys = new KeyTable(loadKeys(config, log));
  if (config.idleTimeoutSeconds <= config.storeTimeoutSeconds) {
    // A request with a body keeps the idle timer, which cuts off a client that stops sending
    // it; once the body is in, the timer must outlast the request's wait for the store.
    throw new ConfigError(
      `--idle-timeout (${config.idleTimeoutSeconds}) must be longer than --store-timeout (${config.storeTimeoutSeconds}), ` +
        'or a connection could be closed while its request waits for the store',
    );
  }
  const store = await openStore(config.data, log, { timeoutMs: config.storeTimeoutSeconds * 1_000 });
  const adapter = await loadAdapter();
  // prom-client is loaded only with metrics on: it was most of the binary's start-up.
  const metrics =
    config.metrics || config.metricsPort !== null
      ? new (await import('../metrics.ts')).Metrics({ version: VERSION, runtime: adapter.name })
      : undefined;
  metrics?.keysLoaded(keys.countByPlan());
  metrics?.consumers.load(keys.records());
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
  // Imported only with --redis, like the PostgreSQL client with a postgres:// --data.
  const shared = config.redis
    ? await (await import('../gateway/limiter/redis.ts')).openRedisLimiter({
        url: config.redis,
        mode: config.redisFail,
        fallback: local,
        log,
        onEvent,
      })
    : undefined;
  const limiter = shared ?? local;
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
    corsOrigins: config.corsOrigins,
  });
  const server = await adapter.serve({
    fetch: app.fetch,
    port: config.port,
    hostname: config.host,
    headerTimeoutSeconds: config.headerTimeoutSeconds,
    idleTimeoutSeconds: config.idleTimeoutSeconds,
  });
  const metricsServer =
    metrics && config.metricsPort !== null
      ? await adapter.serve({ fetch: metricsApp(metrics).fetch, port: config.metricsPort, hostname: config.host })
      : undefined;

  const reload = () => {
    if (!config.keys) return log.warn('SIGHUP: no keys file to reload (started without --keys)');
    try {
      keys = new KeyTable(readKeysFile(config.keys, log));
      const keysByPlan = keys.countByPlan();
      metrics?.reloaded(true);
      metrics?.keysLoaded(keysByPlan);
      metrics?.consumers.load(keys.records());
      log.warn('keys reloaded', { file: config.keys, keysByPlan });
    } catch (err) {
      metrics?.reloaded(false);
      log.error('keys reload failed; keeping the previous keys', { file: config.keys, error: (err as Error).message });
    }
  };
  handleSignals({
    log,
    reload,
    servers: metricsServer ? [server, metricsServer] : [server],
    shutdownSeconds: config.shutdownSeconds,
    onStopping: () => {
      stopping = true;
    },
    close: async () => {
      await store.close();
      await shared?.close();
    },
  });

  // Last: whoever waits for this line may signal at once.
  log.info('listening', {
    version: VERSION,
    runtime: adapter.name,
    address: `http://${config.host}:${server.port}`,
    data: describeData(config.data),
    keysByPlan: keys.countByPlan(),
    ...(metricsServer ? { metrics: `http://${config.host}:${metricsServer.port}/metrics` } : {}),
  });
}
