import { describe, expect, test } from 'bun:test';
import { ConfigError, helpText, parseConfig } from './config.ts';

describe('parseConfig', () => {
  test('defaults', () => {
    const c = parseConfig([], {});
    expect([c.port, c.host, c.keys, c.banSeconds, c.banThreshold, c.shutdownSeconds, c.logLevel]).toEqual([
      8080,
      '0.0.0.0',
      '',
      900,
      0,
      10,
      'info',
    ]);
    expect(c.trustProxy).toEqual([]);
    expect(c.data).toBe('./data/petstore.db');
  });

  test('flags win over environment variables, which win over defaults', () => {
    const env = { PORT: '9000', HOST: '127.0.0.1', PETSTORE_KEYS_FILE: '/etc/keys.json', PETSTORE_DATA: ':memory:' };
    const c = parseConfig(['--port', '9100', '--trust-proxy=10.0.0.0/8,192.168.0.0/16'], env);
    expect([c.port, c.host, c.keys, c.data]).toEqual([9100, '127.0.0.1', '/etc/keys.json', ':memory:']);
    expect(c.trustProxy).toEqual(['10.0.0.0/8', '192.168.0.0/16']);
  });

  test.each([
    [['--nope'], 'unknown option "--nope"'],
    [['--port'], '--port: needs a value (N)'],
    [['--port', 'http'], '--port: expected a whole number from 0 to 65535, got "http"'],
    [['--port', '70000'], '--port: expected a whole number from 0 to 65535, got "70000"'],
    [['--log-format', 'xml'], '--log-format: expected one of json, pretty, got "xml"'],
    [['--log-level', 'loud'], '--log-level: expected one of debug, info, warn, error, got "loud"'],
  ])('%p is refused: %s', (argv, message) => {
    expect(() => parseConfig(argv, {})).toThrow(new ConfigError(message));
  });

  test('a repeated list flag adds up', () => {
    const c = parseConfig(['--trust-proxy', '10.0.0.0/8', '--trust-proxy', '192.168.0.0/16,fd00::/8'], {});
    expect(c.trustProxy).toEqual(['10.0.0.0/8', '192.168.0.0/16', 'fd00::/8']);
  });

  test('a bad environment value names the variable', () => {
    expect(() => parseConfig([], { PORT: 'eighty' })).toThrow(
      new ConfigError('PORT: expected a whole number from 0 to 65535, got "eighty"'),
    );
  });
});

test('--help lists every flag with its env var and default', () => {
  const help = helpText('1.0.0');
  expect(help).toContain('petstore 1.0.0');
  expect(help).toMatch(/--port N +TCP port to listen on \(env PORT, default 8080\)/);
  expect(help).toMatch(/--keys FILE .*\(env PETSTORE_KEYS_FILE, default none\)/);
  expect(help).toMatch(/--data PATH .*\(env PETSTORE_DATA, default /);
  expect(help).toMatch(/--trust-proxy CIDR\.\.\. .*\(env PETSTORE_TRUST_PROXY, default none\)/);
  expect(help).toContain(
    'petstore keys COMMAND [options]  add, rotate, revoke, list or audit the API keys of a keys file',
  );
  expect(help).toContain('petstore healthcheck');
});

test('--redis takes a redis:// or rediss:// URL; --redis-fail open (default) or closed', () => {
  expect(parseConfig([], {})).toMatchObject({ redis: '', redisFail: 'open' });
  const env = { PETSTORE_REDIS_URL: 'rediss://:pw@cache.internal:6380/2', PETSTORE_REDIS_FAIL: 'closed' };
  expect(parseConfig([], env)).toMatchObject({ redis: 'rediss://:pw@cache.internal:6380/2', redisFail: 'closed' });
  expect(() => parseConfig(['--redis', 'cache:6379'], {})).toThrow(
    new ConfigError('--redis: expected a redis:// or rediss:// URL with a host, got "cache:6379"'),
  );
  expect(() => parseConfig(['--redis-fail', 'maybe'], {})).toThrow(
    new ConfigError('--redis-fail: expected one of open, closed, got "maybe"'),
  );
});

test('options that do not go together are refused by parseConfig, before any port is bound', () => {
  expect(() => parseConfig(['--admin-port', '9091'], {})).toThrow(
    new ConfigError('--admin-port: needs --keys FILE or --keys store, where the admin API keeps consumers and keys'),
  );
  expect(() => parseConfig(['--keys', 'store'], { PETSTORE_DATA: ':memory:' })).toThrow(
    new ConfigError('--keys store: needs --data with a SQLite file or a postgres:// URL, not :memory:'),
  );
  expect(() => parseConfig(['--idle-timeout', '2', '--store-timeout', '2'], {})).toThrow(
    new ConfigError(
      '--idle-timeout (2) must be longer than --store-timeout (2), or a connection could be closed while its request waits for the store',
    ),
  );
  expect(() => parseConfig(['--trust-proxy', '10.0.0.0/33'], {})).toThrow(ConfigError);
  expect(() => parseConfig([], { PETSTORE_WEBHOOK_RETRY_SECONDS: 'soon' })).toThrow(ConfigError);
  expect(parseConfig([], { PETSTORE_WEBHOOK_RETRY_SECONDS: '1,2' }).webhookRetryDelays).toEqual([1_000, 2_000]);
  expect(parseConfig(['--admin-port', '9091', '--help'], {}).help).toBe(true);
});

test('--latency-objective takes thresholds in seconds; 0.1 by default', () => {
  expect(parseConfig([], {}).latencyObjectives).toEqual([0.1]);
  expect(parseConfig([], { PETSTORE_LATENCY_OBJECTIVE: '0.3,1.5' }).latencyObjectives).toEqual([0.3, 1.5]);
  expect(() => parseConfig(['--latency-objective', '100ms'], {})).toThrow(
    new ConfigError(
      '--latency-objective: expected seconds from 0.001 to 60, comma-separated, such as 0.1,0.3, got "100ms"',
    ),
  );
  expect(() => parseConfig(['--latency-objective', '0'], {})).toThrow(
    new ConfigError(
      '--latency-objective: expected seconds from 0.001 to 60, comma-separated, such as 0.1,0.3, got "0"',
    ),
  );
});
