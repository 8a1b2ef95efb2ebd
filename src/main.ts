import { readFileSync } from 'node:fs';
import process from 'node:process';
import { createApp } from './app.ts';
import { runCli } from './cli.ts';
import { systemClock } from './clock.ts';
import { type Config, ConfigError, helpText, parseConfig } from './config.ts';
import { KeyTable } from './gateway/auth.ts';
import { TrustedProxies } from './gateway/client-address.ts';
import { type KeyRecord, KeysFileError, parseKeys } from './gateway/keys.ts';
import { SlidingWindowLimiter } from './gateway/rate-limit.ts';
import { newKeyEntry } from './gateway/tokens.ts';
import { createLogger, type Logger } from './log.ts';
import type { RuntimeAdapter } from './serve/server.ts';
import { describeData, openStore } from './store/open.ts';
import { VERSION } from './version.ts';

/** Exit code for bad usage or configuration, before the port opens. */
const EXIT_CONFIG = 2;

async function loadAdapter(): Promise<RuntimeAdapter> {
  if ('Bun' in globalThis) return (await import('./serve/bun.ts')).adapter;
  if ('Deno' in globalThis) return (await import('./serve/deno.ts')).adapter;
  return (await import('./serve/node.ts')).adapter;
}

function loadKeys(config: Config, log: Logger): KeyRecord[] {
  if (config.keys) return parseKeys(readKeysFile(config.keys));
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
  log.warn('serving with a generated development key', { key: entry.name, plan: entry.plan });
  return parseKeys(JSON.stringify({ keys: [entry] }));
}

function readKeysFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new KeysFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
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
  const limiter = new SlidingWindowLimiter({
    clock: systemClock,
    onEvent: (e) =>
      e.type === 'ban_start'
        ? log.warn('ban started', {
            subject: e.subject.label,
            plan: e.subject.plan,
            until: new Date(e.until).toISOString(),
          })
        : log.warn('ban ended', { subject: e.subject.label, plan: e.subject.plan }),
  });
  const app = createApp({
    store,
    keys: () => keys,
    limiter,
    log,
    clientAddress: (c) => trust.clientAddress(adapter.peerAddress(c), c.req.header('x-forwarded-for')),
    ban: { seconds: config.banSeconds, ...(config.banThreshold > 0 ? { threshold: config.banThreshold } : {}) },
    docs: { publicUrl: config.publicUrl, stagingUrl: config.stagingUrl },
  });
  const server = await adapter.serve({ fetch: app.fetch, port: config.port, hostname: config.host });
  log.info('listening', {
    version: VERSION,
    runtime: adapter.name,
    address: `http://${config.host}:${server.port}`,
    data: describeData(config.data),
    keysByPlan: keys.countByPlan(),
  });

  if (config.keys) {
    process.on('SIGHUP', () => {
      try {
        keys = new KeyTable(parseKeys(readKeysFile(config.keys)));
        log.warn('keys reloaded', { keysByPlan: keys.countByPlan() });
      } catch (err) {
        log.error('keys reload failed; keeping the previous keys', { error: (err as Error).message });
      }
    });
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal, deadlineSeconds: config.shutdownSeconds });
    const deadline = setTimeout(() => {
      log.warn('shutdown deadline passed; closing open connections');
      void server.stop(true);
    }, config.shutdownSeconds * 1000);
    await server.stop(false);
    clearTimeout(deadline);
    await store.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
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
