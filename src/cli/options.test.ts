import { describe, expect, test } from 'bun:test';
import { HEALTHCHECK } from './healthcheck.ts';
import { at } from './key-options.ts';
import { KEYS_ADD } from './keys-add.ts';
import { KEYS_LIST } from './keys-list.ts';
import { KEYS_REVOKE } from './keys-revoke.ts';
import { KEYS_ROTATE } from './keys-rotate.ts';
import { ConfigError, parseOptions } from './options.ts';
import { isCommand, runCli } from './run.ts';

const DAY_MS = 86_400_000;

describe('the subcommands read their flags through one parser', () => {
  test('keys add: every flag, as --flag value or --flag=value', () => {
    const argv = [
      '--keys',
      'keys.json',
      '--consumer=acme',
      '--plan',
      'enterprise',
      '--scopes',
      'pets:read',
      '--expires',
      '7d',
      '--not-before=2027-02-20T00:00:00Z',
      '--id',
      'k1',
      '--owner',
      'petstore',
      '--per-minute',
      '100',
      '--per-day=5000',
    ];
    expect(parseOptions(KEYS_ADD.command, argv)).toEqual({
      keys: 'keys.json',
      data: '',
      consumer: 'acme',
      plan: 'enterprise',
      scopes: ['pets:read'],
      expires: 7 * DAY_MS,
      notBefore: '2027-02-20T00:00:00Z',
      id: 'k1',
      owner: 'petstore',
      perMinute: 100,
      perDay: 5000,
      help: false,
    });
  });

  test('keys add: what is not given is left out, so the file gets no field for it', () => {
    expect(parseOptions(KEYS_ADD.command, ['--keys', 'k.json', '--consumer', 'acme'])).toEqual({
      keys: 'k.json',
      data: '',
      consumer: 'acme',
      plan: undefined,
      scopes: undefined,
      expires: undefined,
      notBefore: undefined,
      id: undefined,
      owner: '',
      perMinute: undefined,
      perDay: undefined,
      help: false,
    });
  });

  test('rotate, revoke and list', () => {
    const common = ['--keys', 'k.json', '--consumer', 'acme'];
    expect(
      parseOptions(KEYS_ROTATE.command, [
        ...common,
        '--overlap',
        '12h',
        '--scopes',
        'pets:read,orders:read,orders:write',
      ]),
    ).toEqual({
      keys: 'k.json',
      data: '',
      consumer: 'acme',
      overlap: 43_200_000,
      scopes: ['pets:read', 'orders:read', 'orders:write'],
      id: undefined,
      help: false,
    });
    expect(parseOptions(KEYS_REVOKE.command, [...common, '--key', '252026fe'])).toEqual({
      keys: 'k.json',
      data: '',
      consumer: 'acme',
      key: '252026fe',
      help: false,
    });
    expect(parseOptions(KEYS_LIST.command, ['--keys', 'k.json', '--json'])).toEqual({
      keys: 'k.json',
      data: '',
      json: true,
      help: false,
    });
  });

  test("healthcheck: the server's PORT and HOST and their defaults; flags win", () => {
    expect(parseOptions(HEALTHCHECK.command, [], {})).toEqual({ port: 8080, host: '0.0.0.0', help: false });
    expect(parseOptions(HEALTHCHECK.command, [], { PORT: '9000', HOST: '::1' })).toEqual({
      port: 9000,
      host: '::1',
      help: false,
    });
    expect(parseOptions(HEALTHCHECK.command, ['--port', '9100'], { PORT: '9000' }).port).toBe(9100);
  });

  test.each([
    [[], KEYS_ADD, '--consumer: required'],
    [['--keys', 'k.json'], KEYS_ADD, '--consumer: required'],
    [
      ['--keys', 'k.json', '--consumer', 'a b'],
      KEYS_ADD,
      '--consumer: expected 1-64 letters, digits, ".", "_" or "-", got "a b"',
    ],
    [
      ['--keys', 'k.json', '--consumer', 'acme', '--plan', 'gold'],
      KEYS_ADD,
      '--plan: expected one of free, pro, business, enterprise, got "gold"',
    ],
    [
      ['--keys', 'k.json', '--consumer', 'acme', '--scopes', 'pets:read,pets:admin'],
      KEYS_ADD,
      '--scopes: expected one or more of pets:read, pets:write, orders:read, orders:write, admin, got "pets:admin"',
    ],
    [
      ['--keys', 'k.json', '--consumer', 'acme', '--scopes', ','],
      KEYS_ADD,
      '--scopes: expected one or more of pets:read, pets:write, orders:read, orders:write, admin, got ","',
    ],
    [
      ['--keys', 'k.json', '--consumer', 'acme', '--expires', '2027-02-30T00:00:00Z'],
      KEYS_ADD,
      '--expires: expected an RFC 3339 date-time (2027-02-20T00:00:00Z) or a duration (7d), got "2027-02-30T00:00:00Z"',
    ],
    [
      ['--keys', 'k.json', '--consumer', 'acme', '--per-day', '0'],
      KEYS_ADD,
      '--per-day: expected a whole number from 1 to 1000000000, got "0"',
    ],
    [
      ['--keys', 'k.json', '--consumer', 'acme', '--name', 'shop'],
      KEYS_ADD,
      'unknown option "--name"; expected --keys, --data, --consumer, --plan, --scopes, --expires, --not-before, --id, --owner, --per-minute, --per-day, --help',
    ],
    [['--keys', 'k.json', '--consumer'], KEYS_ADD, '--consumer: needs a value (NAME)'],
    [
      ['--keys', 'k.json', '--consumer', 'acme', '--overlap', '7w'],
      KEYS_ROTATE,
      '--overlap: expected a duration (a number and s, m, h or d, such as 7d), got "7w"',
    ],
    [['--keys', 'k.json', '--consumer', 'acme'], KEYS_ROTATE, '--overlap: required'],
    [['--keys', 'k.json', '--consumer', 'acme'], KEYS_REVOKE, '--key: required'],
    [['--keys', 'k.json', '--json=yes'], KEYS_LIST, '--json: takes no value, got "--json=yes"'],
    [['--keys', 'k.json', 'acme'], KEYS_LIST, 'unexpected argument "acme"'],
    [['--timeout', '3'], HEALTHCHECK, 'unknown option "--timeout"; expected --port, --host, --help'],
    [['--port', 'http'], HEALTHCHECK, '--port: expected a port number, got "http"'],
  ])('%p is refused', (argv, sub, message) => {
    expect(() => parseOptions(sub.command, argv as string[])).toThrow(new ConfigError(message));
  });

  test('a bad environment value names the variable', () => {
    expect(() => parseOptions(HEALTHCHECK.command, [], { PORT: '99999' })).toThrow(
      new ConfigError('PORT: expected a port number, got "99999"'),
    );
  });

  test('--help is read before anything else, so it prints whatever else is wrong', () => {
    expect(parseOptions(KEYS_ADD.command, ['--plan', 'gold', '--help']).help).toBe(true);
    expect(parseOptions(HEALTHCHECK.command, ['--help'], { PORT: 'eighty' }).help).toBe(true);
  });

  test('a WHEN given as a duration counts from now, in whole seconds', () => {
    expect(at(90 * DAY_MS, Date.UTC(2026, 10, 24, 22, 0, 0, 750))).toBe('2027-02-22T22:00:00Z');
    expect(at('2027-02-20T00:00:00+01:00', 0)).toBe('2027-02-20T00:00:00+01:00');
  });
});

describe('runCli', () => {
  test('bad usage names the command whose --help to read', async () => {
    const refusal = (argv: string[]) =>
      runCli(argv, {}).then(
        () => undefined,
        (err: ConfigError) => err,
      );
    expect(await refusal(['keys', 'add'])).toMatchObject({ message: '--consumer: required', command: 'keys add' });
    expect(await refusal(['keys', 'add', '--consumer', 'acme'])).toMatchObject({
      message: 'give --keys FILE (a keys file) or --data URL (the store of --keys store), one of them',
      command: 'keys add',
    });
    expect(await refusal(['keys', 'new', '--name', 'shop', '--plan', 'pro'])).toMatchObject({
      message: 'unknown command "keys new"; expected add, rotate, revoke, list, audit, import',
      command: 'keys',
    });
    expect(await refusal(['healthcheck', '--port'])).toMatchObject({
      message: '--port: needs a value (N)',
      command: 'healthcheck',
    });
    expect(await refusal(['migrate', 'down'])).toMatchObject({
      message: 'unknown command "migrate down"; expected status or up',
    });
  });

  test("isCommand tells the subcommands from the server's options", () => {
    const words = ['keys', 'healthcheck', 'backup', 'restore', 'migrate', '--port', 'serve', 'toString', undefined];
    expect(words.filter(isCommand)).toEqual(['keys', 'healthcheck', 'backup', 'restore', 'migrate']);
  });
});
