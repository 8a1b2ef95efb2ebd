import { expect, test } from 'bun:test';
import { helpText } from '../config.ts';
import { HEALTHCHECK } from './healthcheck.ts';
import { KEYS_ADD } from './keys-add.ts';
import { KEYS_LIST } from './keys-list.ts';
import { KEYS_REVOKE } from './keys-revoke.ts';
import { KEYS_ROTATE } from './keys-rotate.ts';
import { commandHelp } from './options.ts';
import { keysHelp } from './run.ts';

test('petstore --help names the commands and how to get their own help', () => {
  const help = helpText('1.0.0');
  expect(help).toStartWith('petstore 1.0.0: pet store catalogue service and API gateway\n\nUsage:\n');
  expect(help).toContain(
    [
      '  petstore [options]               serve the API',
      '  petstore keys COMMAND [options]  add, rotate, revoke, list or audit the API keys of a keys file',
      '  petstore backup [options]        a consistent copy of a live store (and its keys file)',
      '  petstore restore [options]       put a backup in place; pet ids are never given twice',
      '  petstore migrate status|up       the schema of a store; apply its migrations as a step of their own',
      '  petstore healthcheck [options]   exit 0 when the local server answers /healthz',
      '  petstore COMMAND --help          the options of a command: keys, keys add, healthcheck, ...',
    ].join('\n'),
  );
  expect(help).toContain('\n  --help                  print this help and exit\n');
});

test('petstore keys --help: the usage of every keys command, made from their tables', () => {
  expect(keysHelp()).toBe(
    [
      'Usage:',
      '  petstore keys add    [--keys FILE] [--data URL] --consumer NAME [--plan PLAN] [--scopes S,S]',
      '                       [--expires WHEN] [--not-before WHEN] [--id ID] [--owner USER[:GROUP]]',
      '                       [--per-minute N] [--per-day N]',
      '  petstore keys rotate [--keys FILE] [--data URL] --consumer NAME --overlap DURATION [--scopes S,S]',
      '                       [--id ID]',
      '  petstore keys revoke [--keys FILE] [--data URL] --consumer NAME --key ID',
      '  petstore keys list   [--keys FILE] [--data URL] [--json]',
      '  petstore keys audit  [--keys FILE] [--data URL] [--after ID] [--json]',
      '  petstore keys import FILE --data URL',
      '  petstore keys COMMAND --help   the options of one, with their defaults',
      '',
      'add and rotate print the new token alone on stdout (shown once) and its key id on stderr.',
      'WHEN: an RFC 3339 date-time (2027-02-20T00:00:00Z) or a duration from now (90d).',
      'DURATION: a number and s, m, h or d (7d).',
      'The file is written atomically under FILE.lock; a server watching it has the change in force within a second.',
      'In the store (--data), a change is one transaction with its audit record; every server sees it within 2 s.',
      '',
    ].join('\n'),
  );
});

test('petstore keys add --help', () => {
  const help = commandHelp(KEYS_ADD.command);
  expect(help).toStartWith(
    [
      'Usage: petstore keys add [--keys FILE] [--data URL] --consumer NAME [--plan PLAN] [--scopes S,S]',
      '                         [--expires WHEN] [--not-before WHEN] [--id ID] [--owner USER[:GROUP]]',
      '                         [--per-minute N] [--per-day N]',
      '',
      'Adds a key to a consumer, made on --plan when missing.',
    ].join('\n'),
  );
  for (const line of [
    '  --keys FILE             the keys file (JSON), made when missing; or --data',
    '  --data URL              the data store of servers run with --keys store: a SQLite file or a postgres:// URL; or --keys',
    '  --plan PLAN             the plan of a new consumer: free, pro, business, enterprise; may be left out for an existing one',
    '  --scopes S,S            what the new key may do: pets:read, pets:write, orders:read, orders:write, admin (admin: the admin API only) (default every scope)',
    '  --expires WHEN          the key is refused (401) from then on (default never)',
    "  --per-minute N          a new consumer's quota per minute; both or neither (the enterprise plan needs both) (default the plan's)",
    '  --help                  print this help and exit',
    'WHEN: an RFC 3339 date-time (2027-02-20T00:00:00Z) or a duration from now (90d).',
  ]) {
    expect(help).toContain(`\n${line}\n`);
  }
});

test('petstore keys rotate --help', () => {
  const help = commandHelp(KEYS_ROTATE.command);
  expect(help).toStartWith(
    'Usage: petstore keys rotate [--keys FILE] [--data URL] --consumer NAME --overlap DURATION\n                            [--scopes S,S] [--id ID]\n',
  );
  expect(help).toContain("\n  --overlap DURATION      how long the consumer's current keys keep working (required)\n");
  expect(help).toContain(
    '\n  --scopes S,S            what the new key may do: pets:read, pets:write, orders:read, orders:write, admin (admin: the admin API only) (default those of the current keys)\n',
  );
  expect(help).toContain('\nDURATION: a number and s, m, h or d (7d).\n');
  expect(help).not.toContain('WHEN');
});

test('petstore keys revoke --help and keys list --help', () => {
  expect(commandHelp(KEYS_REVOKE.command)).toBe(
    [
      'Usage: petstore keys revoke [--keys FILE] [--data URL] --consumer NAME --key ID',
      '',
      'Removes a key of a consumer; the consumer (and its quota) stays.',
      '',
      'Options:',
      '  --keys FILE             the keys file (JSON); or --data',
      '  --data URL              the data store of servers run with --keys store: a SQLite file or a postgres:// URL; or --keys',
      '  --consumer NAME         the consumer: 1-64 letters, digits, ".", "_" or "-" (required)',
      '  --key ID                the id of the key, as keys list shows it (required)',
      '  --help                  print this help and exit',
      '',
      'The file is written atomically under FILE.lock; a server watching it has the change in force within a second.',
      'In the store (--data), a change is one transaction with its audit record; every server sees it within 2 s.',
      '',
    ].join('\n'),
  );
  expect(commandHelp(KEYS_LIST.command)).toContain(
    'Usage: petstore keys list [--keys FILE] [--data URL] [--json]\n\nLists consumers, key ids, scopes, dates and state',
  );
});

test('petstore healthcheck --help', () => {
  expect(commandHelp(HEALTHCHECK.command)).toBe(
    [
      'Usage: petstore healthcheck [--port N] [--host H]',
      '',
      'Exits 0 when the local server answers GET /healthz with 200 within 3 s, else 1.',
      '',
      'Options:',
      '  --port N                the port the server listens on (env PORT, default 8080)',
      '  --host H                the address to ask; a wildcard address asks 127.0.0.1 (env HOST, default 127.0.0.1)',
      '  --help                  print this help and exit',
      '',
    ].join('\n'),
  );
});
