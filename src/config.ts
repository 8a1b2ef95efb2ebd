// The server's configuration. `OPTIONS` is the one table of flags, env vars and defaults (its
// first rows, --port and --host, come from src/cli/listen.ts); `parseConfig()` checks each option
// and their combinations before a port is bound; `helpText()` returns the --help text.
import * as v from 'valibot';
import { durationMs } from './cli/key-options.ts';
import { LISTEN_OPTIONS } from './cli/listen.ts';
import {
  type Command,
  ConfigError,
  HELP,
  type OptionTable,
  optionLines,
  parseOptions,
  type Values,
} from './cli/options.ts';
import { checked, int, on, oneOf, text, toggle, urlWith, words } from './cli/parsers.ts';
import { DEFAULT_IPV6_PREFIX, TrustedProxies } from './core/addresses.ts';
import { DEFAULT_ORDER_HOLD_MS } from './core/order-records.ts';
import { KEYS_STORE } from './keys/live-keys.ts';
import { DEFAULT_BAN, DEFAULT_MAX_IN_FLIGHT } from './keys/plans.ts';
import { isCidrBlock } from './keys/webhook-targets.ts';
import { LOG_LEVELS, type LogFormat, type LogLevel } from './log.ts';
import { MEMORY } from './store/open.ts';
import { parsePairs, SAMPLERS, type SamplerName } from './trace/settings.ts';
import { parseRetrySeconds } from './webhooks/schedule.ts';

export { ConfigError };

/** The most workers `--workers` takes: past this, a host is better served by more instances. */
const MAX_WORKERS = 64;

const httpUrl = checked(
  'an http(s) URL without query or fragment',
  v.pipe(
    v.string(),
    v.check((raw) => {
      const url = urlWith(raw, ['http:', 'https:']);
      return url !== undefined && !url.search && !url.hash;
    }),
  ),
);
/**
 * Origins for CORS: `*`, or each exactly as a browser sends it in `Origin` (scheme, host, port).
 */
const origins = checked(
  '* or an origin such as https://app.example',
  v.pipe(
    v.string(),
    v.transform(words),
    v.array(
      v.pipe(
        v.string(),
        v.check((o) => o === '*' || urlWith(o, ['http:', 'https:'])?.origin === o),
      ),
    ),
  ),
);
/**
 * `key=value,…` (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_RESOURCE_ATTRIBUTES`), read at once so a
 * mistake stops the start.
 */
const pairs = (raw: string, source: string): Record<string, string> => {
  try {
    return parsePairs(raw);
  } catch (err) {
    throw new ConfigError(`${source}: ${(err as Error).message}`);
  }
};
const ratio = checked(
  'a number from 0 to 1',
  v.pipe(v.string(), v.regex(/^(0|1|0?\.\d+|1\.0*)$/), v.transform(Number)),
);
const redisUrl = checked(
  'a redis:// or rediss:// URL with a host',
  v.pipe(
    v.string(),
    v.check((raw) => Boolean(urlWith(raw, ['redis:', 'rediss:'])?.hostname)),
  ),
);

const cidrBlocks = checked(
  'CIDR blocks such as 10.20.0.0/16 (comma or space separated)',
  v.pipe(v.string(), v.transform(words), v.array(v.pipe(v.string(), v.check(isCidrBlock)))),
);

/** Every option, in `--help` order. */
export const OPTIONS = {
  // --port and --host are defined in src/cli/listen.ts, because `petstore healthcheck` reads the
  // same rows: it calls the port and address the server listens on.
  ...LISTEN_OPTIONS,
  keys: {
    flag: '--keys',
    env: 'PETSTORE_KEYS_FILE',
    arg: 'FILE',
    help: 'API keys file (JSON), watched; or "store": consumers and keys in the --data store, shared by every instance on it; without it a development key is generated and printed once',
    fallback: '',
    shownDefault: 'none',
    parse: text,
  },
  data: {
    flag: '--data',
    env: 'PETSTORE_DATA',
    arg: 'PATH',
    help: 'where pets are kept: a SQLite file, a postgres:// URL, or ":memory:" (in memory only)',
    fallback: './data/petstore.db',
    parse: text,
  },
  storeTimeoutSeconds: {
    flag: '--store-timeout',
    env: 'PETSTORE_STORE_TIMEOUT',
    arg: 'S',
    help: 'seconds a request may wait for the store (a connection, a query, a lock) before it is answered 503',
    fallback: 2,
    parse: int(1, 60),
  },
  redis: {
    flag: '--redis',
    env: 'PETSTORE_REDIS_URL',
    arg: 'URL',
    help: 'share rate limits and bans with other instances through Redis (redis:// or rediss://)',
    fallback: '',
    shownDefault: 'none (limits kept in this process)',
    parse: redisUrl,
  },
  redisFail: {
    flag: '--redis-fail',
    env: 'PETSTORE_REDIS_FAIL',
    arg: 'MODE',
    help: 'while Redis is unreachable: open (each instance limits on its own) or closed (answer 503)',
    fallback: 'open' as 'open' | 'closed',
    parse: oneOf(['open', 'closed'] as const),
  },
  trustProxy: {
    flag: '--trust-proxy',
    env: 'PETSTORE_TRUST_PROXY',
    arg: 'CIDR...',
    help: 'proxies whose X-Forwarded-For is believed (comma or space separated)',
    fallback: [] as string[],
    shownDefault: 'none',
    parse: words,
  },
  ipv6Prefix: {
    flag: '--ipv6-prefix',
    env: 'PETSTORE_IPV6_PREFIX',
    arg: 'N',
    help: 'IPv6 clients without a valid key are counted by this prefix length (128: each address alone)',
    fallback: DEFAULT_IPV6_PREFIX,
    parse: int(1, 128),
  },
  corsOrigins: {
    flag: '--cors-origin',
    env: 'PETSTORE_CORS_ORIGINS',
    arg: 'ORIGIN',
    help: 'let browser pages from ORIGIN call the API (repeatable, or comma separated; * for any origin)',
    fallback: [] as string[],
    shownDefault: 'none (no CORS headers)',
    parse: origins,
  },
  experimental: {
    flag: '--experimental',
    env: 'PETSTORE_EXPERIMENTAL',
    help: 'serve the experimental operations (x-stability-level: experimental) and list them in /openapi.*; without it they answer 404 as an unknown path does',
    fallback: false,
    shownDefault: 'off',
    parse: toggle,
  },
  orderHoldMs: {
    flag: '--order-hold',
    env: 'PETSTORE_ORDER_HOLD',
    arg: 'DURATION',
    help: 'how long a placed order holds its pet before it expires and the pet is available again (s, m, h or d)',
    fallback: DEFAULT_ORDER_HOLD_MS,
    shownDefault: '30m',
    parse: durationMs,
  },
  banSeconds: {
    flag: '--ban-seconds',
    env: 'PETSTORE_BAN_SECONDS',
    arg: 'N',
    help: 'length of the temporary ban after repeated 429s',
    fallback: DEFAULT_BAN.seconds,
    parse: int(1, 7 * 86_400),
  },
  banThreshold: {
    flag: '--ban-threshold',
    env: 'PETSTORE_BAN_THRESHOLD',
    arg: 'N',
    help: 'refusals within a minute that start a ban (0: the per-minute quota)',
    fallback: 0,
    parse: int(0, 1_000_000_000),
  },
  maxInFlight: {
    flag: '--max-in-flight',
    env: 'PETSTORE_MAX_IN_FLIGHT',
    arg: 'N',
    help: 'requests one consumer (its keys together) may have in flight at once; more get 429 too_many_concurrent_requests',
    fallback: DEFAULT_MAX_IN_FLIGHT,
    parse: int(1, 1_000_000),
  },
  workers: {
    flag: '--workers',
    env: 'PETSTORE_WORKERS',
    arg: 'N|auto',
    help: 'event loops serving the port together (auto: one per CPU this process may use); the limits, bans and in-flight caps hold for them all (Bun only)',
    fallback: 1 as number | 'auto',
    parse: (raw: string, source: string): number | 'auto' =>
      raw === 'auto' ? 'auto' : int(1, MAX_WORKERS)(raw, source),
  },
  shutdownSeconds: {
    flag: '--shutdown-timeout',
    env: 'PETSTORE_SHUTDOWN_TIMEOUT',
    arg: 'S',
    help: 'seconds to finish in-flight requests on SIGTERM before closing anyway',
    fallback: 10,
    parse: int(0, 3600),
  },
  headerTimeoutSeconds: {
    flag: '--header-timeout',
    env: 'PETSTORE_HEADER_TIMEOUT',
    arg: 'S',
    help: "seconds a connection may take to send its request headers before it is closed (Node; Bun's is fixed at about 10)",
    fallback: 10,
    parse: int(1, 255),
  },
  idleTimeoutSeconds: {
    flag: '--idle-timeout',
    env: 'PETSTORE_IDLE_TIMEOUT',
    arg: 'S',
    help: 'seconds a kept-alive connection may sit idle between requests before it is closed',
    fallback: 10,
    parse: int(1, 255),
  },
  publicUrl: {
    flag: '--public-url',
    env: 'PETSTORE_PUBLIC_URL',
    arg: 'URL',
    help: 'production base URL: the served spec\'s first server ("/v1" is added; default: the relative /v1)',
    fallback: '',
    shownDefault: 'none',
    parse: httpUrl,
  },
  stagingUrl: {
    flag: '--staging-url',
    env: 'PETSTORE_STAGING_URL',
    arg: 'URL',
    help: 'staging base URL: the served spec\'s next server ("/v1" is added)',
    fallback: '',
    shownDefault: 'none',
    parse: httpUrl,
  },
  webhookOutboxMax: {
    flag: '--webhook-outbox-max',
    env: 'PETSTORE_WEBHOOK_OUTBOX_MAX',
    arg: 'N',
    help: 'webhook events kept undelivered at most; beyond it the oldest failed ones are dropped first (counted)',
    fallback: 10_000,
    parse: int(1, 100_000_000),
  },
  webhookAllowCidr: {
    flag: '--webhook-allow-cidr',
    env: 'PETSTORE_WEBHOOK_ALLOW_CIDRS',
    arg: 'CIDR...',
    help: 'private ranges webhooks may reach when a host name resolves into them (comma or space separated); others are refused (SECURITY.md)',
    fallback: [] as string[],
    shownDefault: 'none (public addresses and loopback only)',
    parse: cidrBlocks,
  },
  logLevel: {
    flag: '--log-level',
    env: 'PETSTORE_LOG_LEVEL',
    arg: 'L',
    help: `least severe log level: ${LOG_LEVELS.join(', ')}`,
    fallback: 'info' as LogLevel,
    parse: oneOf(LOG_LEVELS),
  },
  logFormat: {
    flag: '--log-format',
    env: 'PETSTORE_LOG_FORMAT',
    arg: 'F',
    help: 'json or pretty',
    fallback: (process.stdout.isTTY ? 'pretty' : 'json') as LogFormat,
    shownDefault: 'json, pretty on a terminal',
    parse: oneOf(['json', 'pretty'] as const),
  },
  otelEndpoint: {
    flag: '--otel-endpoint',
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    arg: 'URL',
    help: 'export traces over OTLP/HTTP (protobuf) to this collector (Jaeger, Tempo, the OpenTelemetry Collector); /v1/traces is added',
    fallback: '',
    shownDefault: 'none (no export; trace ids still in the logs)',
    parse: httpUrl,
  },
  otelTracesEndpoint: {
    flag: '--otel-traces-endpoint',
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    arg: 'URL',
    help: 'export traces to this URL as it is (overrides --otel-endpoint)',
    fallback: '',
    shownDefault: 'none',
    parse: httpUrl,
  },
  otelHeaders: {
    flag: '--otel-headers',
    env: 'OTEL_EXPORTER_OTLP_HEADERS',
    arg: 'K=V,...',
    help: 'headers sent with each export (an ingest token, a tenant); never logged',
    fallback: {} as Record<string, string>,
    shownDefault: 'none',
    parse: pairs,
  },
  otelServiceName: {
    flag: '--otel-service-name',
    env: 'OTEL_SERVICE_NAME',
    arg: 'NAME',
    help: 'service.name of the exported traces',
    fallback: '',
    shownDefault: 'petstore',
    parse: text,
  },
  otelResourceAttributes: {
    flag: '--otel-resource-attributes',
    env: 'OTEL_RESOURCE_ATTRIBUTES',
    arg: 'K=V,...',
    help: 'more resource attributes of the exported traces (deployment.environment.name=prod,...)',
    fallback: {} as Record<string, string>,
    shownDefault: 'none',
    parse: pairs,
  },
  otelSampler: {
    flag: '--otel-sampler',
    env: 'OTEL_TRACES_SAMPLER',
    arg: 'NAME',
    help: `which traces are exported: ${SAMPLERS.join(', ')}; a caller's sampled flag and trace id count only with a valid key`,
    fallback: 'parentbased_always_on' as SamplerName,
    parse: oneOf(SAMPLERS),
  },
  otelSamplerArg: {
    flag: '--otel-sampler-arg',
    env: 'OTEL_TRACES_SAMPLER_ARG',
    arg: 'R',
    help: 'the ratio of traces the traceidratio samplers export, 0 to 1',
    fallback: 1,
    parse: ratio,
  },
  otelKeepSlowerThan: {
    flag: '--otel-keep-slower-than',
    env: 'PETSTORE_OTEL_KEEP_SLOWER_THAN',
    arg: 'S',
    help: 'export the trace of a request that took this many seconds or more, whatever the sampler chose, when its caller holds a valid key; 0: never for its time',
    fallback: null as number | null,
    shownDefault: 'the largest --latency-objective',
    parse: checked(
      'seconds from 0 to 60, such as 0.5',
      v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/), v.transform(Number), v.minValue(0), v.maxValue(60)),
    ),
  },
  otelKeepErrors: {
    flag: '--otel-keep-errors',
    env: 'PETSTORE_OTEL_KEEP_ERRORS',
    arg: 'BOOL',
    help: 'export the trace of a request answered 5xx, whatever the sampler chose, when its caller holds a valid key: true or false',
    fallback: true,
    parse: toggle,
  },
  otelKeepMaxPerSecond: {
    flag: '--otel-keep-max-per-second',
    env: 'PETSTORE_OTEL_KEEP_MAX_PER_SECOND',
    arg: 'N',
    help: 'traces kept for their time or their 5xx each second at most; the excess is counted in petstore_trace_spans_dropped_total{reason="tail_capped"}',
    fallback: 100,
    parse: int(0, 1_000_000),
  },
  otelRingRecords: {
    flag: '--otel-ring-records',
    env: 'PETSTORE_OTEL_RING_RECORDS',
    arg: 'N',
    help: 'requests the trace ring holds (about 1.5 KiB each) while they are served and until the export reads the kept ones; a kept one overwritten first is counted in petstore_trace_spans_dropped_total{reason="ring_overwritten"}',
    fallback: 4096,
    parse: int(8, 1_048_576),
  },
  metrics: {
    flag: '--metrics',
    env: 'PETSTORE_METRICS',
    help: 'serve GET /metrics (Prometheus text format), without a key',
    fallback: false,
    shownDefault: 'off',
    parse: toggle,
  },
  metricsPort: {
    flag: '--metrics-port',
    env: 'PETSTORE_METRICS_PORT',
    arg: 'N',
    help: 'serve /metrics on this port of --host instead of --port (implies --metrics)',
    fallback: null as number | null,
    shownDefault: 'none',
    parse: int(0, 65535),
  },
  latencyObjectives: {
    flag: '--latency-objective',
    env: 'PETSTORE_LATENCY_OBJECTIVE',
    arg: 'S',
    help: 'latency thresholds of your objectives, in seconds (comma-separated): each is a bucket bound of petstore_http_request_duration_seconds, so an SLO rule counts the requests under it exactly',
    fallback: [0.1] as readonly number[],
    shownDefault: '0.1',
    parse: checked(
      'seconds from 0.001 to 60, comma-separated, such as 0.1,0.3',
      v.pipe(
        v.string(),
        v.transform(words),
        v.minLength(1),
        v.array(v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/), v.transform(Number), v.minValue(0.001), v.maxValue(60))),
      ),
    ),
  },
  adminPort: {
    flag: '--admin-port',
    env: 'PETSTORE_ADMIN_PORT',
    arg: 'N',
    help: 'serve the admin API (/admin/v1: consumers, keys, the audit trail) on this port of --admin-host; needs --keys',
    fallback: null as number | null,
    shownDefault: 'none (no admin API)',
    parse: int(0, 65535),
  },
  adminHost: {
    flag: '--admin-host',
    env: 'PETSTORE_ADMIN_HOST',
    arg: 'H',
    help: 'address the admin API binds',
    fallback: '127.0.0.1',
    parse: text,
  },
  help: HELP,
  version: { flag: '--version', help: 'print the version and exit', fallback: false, parse: on },
} satisfies OptionTable;

/** The server's configuration: every option, each checked alone and with the others. */
export type Config = Values<typeof OPTIONS> & {
  /**
   * The webhook retry delays `PETSTORE_WEBHOOK_RETRY_SECONDS` sets (for tests); undefined: the real
   * schedule.
   */
  readonly webhookRetryDelays: number[] | undefined;
};

/** Serving: the command without a name. */
const SERVER: Command<typeof OPTIONS> = { name: '', summary: 'serve the API', options: OPTIONS };

/**
 * Parses the server's options: a flag wins over its environment variable, which wins over the
 * default. Throws a `ConfigError` naming the option for a bad value or combination.
 *
 * @example
 * parseConfig(['--port', '9000'], { PETSTORE_DATA: ':memory:' }).port // 9000
 */
export function parseConfig(argv: readonly string[], env: Record<string, string | undefined>): Config {
  const options = parseOptions(SERVER, argv, env);
  if (!options.help && !options.version) checkTogether(options);
  return { ...options, webhookRetryDelays: retryDelays(env.PETSTORE_WEBHOOK_RETRY_SECONDS) };
}

/**
 * Checks the options against each other, before a port is bound or a file created. Throws a
 * `ConfigError` naming the options.
 */
function checkTogether(options: Values<typeof OPTIONS>): void {
  const { adminPort, keys, data, idleTimeoutSeconds: idle, storeTimeoutSeconds: store } = options;
  if (adminPort !== null && !keys) {
    throw new ConfigError(
      '--admin-port: needs --keys FILE or --keys store, where the admin API keeps consumers and keys',
    );
  }
  if (keys === KEYS_STORE && data === MEMORY) {
    throw new ConfigError(`--keys store: needs --data with a SQLite file or a postgres:// URL, not ${data}`);
  }
  if (options.workers !== 'auto' && options.workers > 1 && data === MEMORY) {
    // Each worker would have a store of its own: a pet created on one would be unknown to the
    // others. `auto` is counted at start, where `workerCount()` (src/serve/start.ts) makes the same
    // check.
    throw new ConfigError(memoryWithWorkers(options.workers));
  }
  if (idle <= store) {
    // A request with a body keeps the idle timer, which cuts off a client that stops sending
    // it; once the body is in, the timer must outlast the request's wait for the store.
    throw new ConfigError(
      `--idle-timeout (${idle}) must be longer than --store-timeout (${store}), ` +
        'or a connection could be closed while its request waits for the store',
    );
  }
  configError(() => new TrustedProxies(options.trustProxy));
}

/** Why `--data :memory:` cannot serve `workers` workers. */
export function memoryWithWorkers(workers: number): string {
  return `--workers ${workers}: needs --data with a SQLite file or a postgres:// URL, not ${MEMORY} (each worker would see only its own pets)`;
}

/** The retry delays of `PETSTORE_WEBHOOK_RETRY_SECONDS`, or undefined for the real schedule. */
function retryDelays(text: string | undefined): number[] | undefined {
  return text === undefined || text === '' ? undefined : configError(() => parseRetrySeconds(text));
}

/** Returns `make()`'s value; rethrows what it throws as a `ConfigError` with the same message. */
function configError<T>(make: () => T): T {
  try {
    return make();
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/** Returns `petstore --help`: the commands, then each option, its env var and its default. */
export function helpText(version: string): string {
  return [
    `petstore ${version}: pet store catalogue service and API gateway`,
    '',
    'Usage:',
    '  petstore [options]               serve the API',
    '  petstore keys COMMAND [options]  add, rotate, revoke, list or audit the API keys of a keys file',
    '  petstore backup [options]        a consistent copy of a live store (and its keys file)',
    '  petstore restore [options]       put a backup in place; pet ids are never given twice',
    '  petstore migrate status|up       the schema of a store; apply its migrations as a step of their own',
    '  petstore healthcheck [options]   exit 0 when the local server answers /healthz',
    '  petstore COMMAND --help          the options of a command: keys, keys add, healthcheck, ...',
    '',
    'Options:',
    ...optionLines(OPTIONS),
    '',
  ].join('\n');
}
