import { readFileSync, statSync } from 'node:fs';
import process from 'node:process';
import { createApp } from './app.ts';
import { runCli } from './cli.ts';
import { systemClock } from './clock.ts';
import { type Config, ConfigError, helpText, parseConfig } from './config.ts';
import { TrustedProxies } from './gateway/addresses.ts';
import { type KeyRecord, KeysFileError, keysFileExposure, parseKeys } from './gateway/keys/file.ts';
import { KeyTable } from './gateway/keys/table.ts';
import { newKeyEntry } from './gateway/keys/tokens.ts';
import type { LimiterEvent } from './gateway/limiter/limiter.ts';
import { SlidingWindowLimiter } from './gateway/limiter/memory.ts';
import { createLogger, type Logger } from './log.ts';
import { Metrics } from './metrics.ts';
import { metricsApp } from './routes/metrics.ts';
import type { RuntimeAdapter } from './serve/server.ts';
import { describeData, openStore } from './store/open.ts';
import { VERSION } from './version.ts';

/** Exit code for bad usage or configuration, before the port opens. */
const EXIT_CONFIG = 2;
/** After the shutdown deadline, how long closing the remaining connections may take. */
const FORCE_STOP_MS = 1_000;

async function loadAdapter(): Promise<RuntimeAdapter> {
  if ('Bun' in globalThis) return (await import('./serve/bun.ts')).adapter;
  if ('Deno' in globalThis) return (await import('./serve/deno.ts')).adapter;
  return (await import('./serve/node.ts')).adapter;
}

function loadKeys(config: Config, log: Logger): KeyRecord[] {
  if (config.keys) return readKeysFile(config.keys, log);
  const { token, entry } = newKeyEntry('dev', 'free');
  process.stderr.write(
    [
      'No keys file given (--keys FILE or PETSTORE_KEYS_FILE): made one development key for this run.',
      `  Authorization: Bearer ${token}`,
      'It is shown once and forgotten at exit. For real keys run `petstore keys new --name NAME --plan PLAN`',
      'and put the printed entries into a keys file: {"keys":[ ... ]}.',
      '',
    ].join('\n'),
  );
  log.warn('serving with a generated development key', { consumer: entry.name, plan: entry.plan });
  return parseKeys(JSON.stringify({ keys: [entry] }));
}

/** The keys of the file at `path`, validated; at start and on each reload. */
function readKeysFile(path: string, log: Logger): KeyRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new KeysFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const keys = parseKeys(text);
  warnIfExposed(path, log);
  return keys;
}

/** Warns (at start and on each reload) when the keys file's mode lets other users read or change it. */
function warnIfExposed(path: string, log: Logger): void {
  if (process.platform === 'win32') return;
  const problem = keysFileExposure(statSync(path).mode);
  if (problem) log.warn(`the keys file is ${problem}`, { file: path });
}

function trustedProxies(cidrs: readonly string[]): TrustedProxies {
  try {
    return new TrustedProxies(cidrs);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

async function serve(config: Config): Promise<void> {
  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  const trust = trustedProxies(config.trustProxy);
  let keys = new KeyTable(loadKeys(config, log));
  const store = await openStore(config.data, log);
  const adapter = await loadAdapter();
  const metrics =
    config.metrics || config.metricsPort !== null
      ? new Metrics({ version: VERSION, runtime: adapter.name })
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
    ? await (await import('./gateway/limiter/redis.ts')).openRedisLimiter({
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
  });
  const server = await adapter.serve({ fetch: app.fetch, port: config.port, hostname: config.host });
  const metricsServer =
    metrics && config.metricsPort !== null
      ? await adapter.serve({ fetch: metricsApp(metrics).fetch, port: config.metricsPort, hostname: config.host })
      : undefined;
  // Always handled: SIGHUP's default action would end the process.
  process.on('SIGHUP', () => {
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
  });

  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal, deadlineSeconds: config.shutdownSeconds });
    const servers = metricsServer ? [server, metricsServer] : [server];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), config.shutdownSeconds * 1000);
    });
    const drained = Promise.all(servers.map((s) => s.stop(false))).then(() => true);
    if (!(await Promise.race([drained, deadline]))) {
      log.warn('shutdown deadline passed; closing open connections', { deadlineSeconds: config.shutdownSeconds });
      const forced = Promise.all(servers.map((s) => s.stop(true)));
      await Promise.race([forced, new Promise((resolve) => setTimeout(resolve, FORCE_STOP_MS))]);
    }
    clearTimeout(timer);
    await store.close();
    await shared?.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

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

async function main(argv: string[]): Promise<number | undefined> {
  if (argv[0] === 'keys' || argv[0] === 'healthcheck') return runCli(argv);
  const config = parseConfig(argv, process.env);
  if (config.help) {
    process.stdout.write(helpText(VERSION));
    return 0;
  }
  if (config.version) {
    process.stdout.write(`petstore ${VERSION}\n`);
    return 0;
  }
  await serve(config);
  return undefined;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof KeysFileError) {
      const what = err instanceof KeysFileError ? 'keys file' : 'configuration';
      process.stderr.write(`petstore: ${what}: ${err.message}\nRun petstore --help for usage.\n`);
      process.exit(EXIT_CONFIG);
    }
    process.stderr.write(`petstore: failed to start: ${String(err)}\n`);
    process.exit(1);
  },
);
