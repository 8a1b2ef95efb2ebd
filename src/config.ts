import { DEFAULT_IPV6_PREFIX } from './gateway/addresses.ts';
import { DEFAULT_MAX_IN_FLIGHT } from './gateway/plans.ts';
import { LOG_LEVELS, type LogFormat, type LogLevel } from './log.ts';

/** Raised for a bad flag or value: `main` prints it with the usage hint and exits 2. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Parser<T> = (raw: string, flag: string) => T;

interface Option<T> {
  readonly flag: string;
  readonly env?: string;
  readonly arg?: string;
  readonly help: string;
  readonly fallback: T;
  /** Shown in `--help` when the fallback is not a plain value. */
  readonly shownDefault?: string;
  readonly parse: Parser<T>;
}

const text: Parser<string> = (raw) => raw;
const int =
  (min: number, max: number): Parser<number> =>
  (raw, flag) => {
    if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new ConfigError(`${flag}: expected a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return Number(raw);
  };
const oneOf =
  <T extends string>(values: readonly T[]): Parser<T> =>
  (raw, flag) => {
    if (!(values as readonly string[]).includes(raw))
      throw new ConfigError(`${flag}: expected one of ${values.join(', ')}, got "${raw}"`);
    return raw as T;
  };
const list: Parser<string[]> = (raw) => raw.split(/[\s,]+/).filter(Boolean);
const httpUrl: Parser<string> = (raw, flag) => {
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (!url || !/^https?:$/.test(url.protocol) || url.search || url.hash) {
    throw new ConfigError(`${flag}: expected an http(s) URL without query or fragment, got "${raw}"`);
  }
  return raw;
};
/** Origins for CORS: `*`, or each exactly as a browser sends it in `Origin` (scheme, host, port). */
const origins: Parser<string[]> = (raw, flag) =>
  list(raw, flag).map((origin) => {
    if (origin === '*') return origin;
    const url = URL.canParse(origin) ? new URL(origin) : undefined;
    if (!url || !/^https?:$/.test(url.protocol) || url.origin !== origin) {
      throw new ConfigError(`${flag}: expected * or an origin such as https://app.example, got "${origin}"`);
    }
    return origin;
  });
const flag: Parser<boolean> = () => true;
const redisUrl: Parser<string> = (raw, flag) => {
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (!url || !/^rediss?:$/.test(url.protocol) || !url.hostname) {
    throw new ConfigError(`${flag}: expected a redis:// or rediss:// URL with a host, got "${raw}"`);
  }
  return raw;
};
/** A switch: the bare flag turns it on; its env var takes true/false, 1/0, yes/no, on/off. */
const toggle: Parser<boolean> = (raw, flag) => {
  if (/^(|1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${flag}: expected true or false, got "${raw}"`);
};

/** Every option, in `--help` order; the table is the single source of flags, env vars and defaults. */
export const OPTIONS = {
  port: { flag: '--port', env: 'PORT', arg: 'N', help: 'TCP port to listen on', fallback: 8080, parse: int(0, 65535) },
  host: { flag: '--host', env: 'HOST', arg: 'H', help: 'address to bind', fallback: '0.0.0.0', parse: text },
  keys: {
    flag: '--keys',
    env: 'PETSTORE_KEYS_FILE',
    arg: 'FILE',
    help: 'API keys file (JSON); without it a development key is generated and printed once',
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
    parse: list,
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
  banSeconds: {
    flag: '--ban-seconds',
    env: 'PETSTORE_BAN_SECONDS',
    arg: 'N',
    help: 'length of the temporary ban after repeated 429s',
    fallback: 900,
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
    help: 'requests one key may have in flight at once; more get 429 too_many_concurrent_requests',
    fallback: DEFAULT_MAX_IN_FLIGHT,
    parse: int(1, 1_000_000),
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
  help: { flag: '--help', help: 'print this help and exit', fallback: false, parse: flag },
  version: { flag: '--version', help: 'print the version and exit', fallback: false, parse: flag },
} satisfies Record<string, Option<unknown>>;

type Options = typeof OPTIONS;
export type Config = { -readonly [K in keyof Options]: Options[K]['fallback'] };

/**
 * Flags first, then environment variables, then defaults.
 *
 * @example
 * parseConfig(['--port', '9000'], { PETSTORE_DATA: ':memory:' }).port // 9000
 */
export function parseConfig(argv: readonly string[], env: Record<string, string | undefined>): Config {
  const config: Record<string, unknown> = {};
  const byFlag = new Map<string, [string, Option<unknown>]>(Object.entries(OPTIONS).map(([k, o]) => [o.flag, [k, o]]));
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    const eq = word.indexOf('=');
    const name = word.startsWith('--') && eq > 0 ? word.slice(0, eq) : word;
    const entry = byFlag.get(name);
    if (!entry) throw new ConfigError(`unknown option "${word}"`);
    const [key, option] = entry;
    if (!option.arg) {
      if (name !== word) throw new ConfigError(`${name}: takes no value, got "${word}"`);
      config[key] = option.parse('', name);
      continue;
    }
    const value = eq > 0 && name !== word ? word.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new ConfigError(`${name}: needs a value (${option.arg})`);
    const parsed = option.parse(value, name);
    // A list flag may be repeated (`--trust-proxy A --trust-proxy B`); its values add up.
    const earlier = config[key];
    config[key] = Array.isArray(earlier) && Array.isArray(parsed) ? [...earlier, ...parsed] : parsed;
  }
  for (const [key, option] of Object.entries(OPTIONS) as [string, Option<unknown>][]) {
    if (key in config) continue;
    const raw = option.env === undefined ? undefined : env[option.env];
    config[key] = raw === undefined || raw === '' ? option.fallback : option.parse(raw, option.env as string);
  }
  return config as Config;
}

/** The `--help` text: every flag with its env var and default. */
export function helpText(version: string): string {
  const rows = Object.values(OPTIONS).map((o: Option<unknown>) => {
    const left = `  ${o.flag}${o.arg ? ` ${o.arg}` : ''}`;
    const shown = o.shownDefault ?? (o.arg ? String(o.fallback) : undefined);
    const details = [o.env ? `env ${o.env}` : '', shown !== undefined ? `default ${shown}` : '']
      .filter(Boolean)
      .join(', ');
    return `${left.padEnd(26)}${o.help}${details ? ` (${details})` : ''}`;
  });
  return [
    `petstore ${version}: pet store catalogue service and API gateway`,
    '',
    'Usage:',
    '  petstore [options]                         serve the API',
    '  petstore keys new --name NAME --plan PLAN  make an API key; prints the token once',
    '  petstore keys add --keys FILE --consumer NAME --plan PLAN [--scopes S,S] [--expires WHEN]',
    '                                             add a key to a consumer (made if missing); token on stdout',
    '  petstore keys rotate --keys FILE --consumer NAME --overlap 7d',
    "                                             new key; the consumer's current keys expire after the overlap",
    '  petstore keys revoke --keys FILE --consumer NAME --key ID',
    '  petstore keys list --keys FILE [--json]    consumers, key ids, scopes, dates (no tokens or hashes)',
    '  petstore keys help                         every keys option; send the server SIGHUP after a change',
    '  petstore healthcheck [--port N] [--host H] exit 0 when the local server answers /healthz',
    '',
    'Options:',
    ...rows,
    '',
  ].join('\n');
}
