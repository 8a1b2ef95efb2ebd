// The subcommands other than serving: `petstore keys add|rotate|revoke|list|audit|import`,
// `petstore backup`, `petstore restore`, `petstore migrate status|up` and `petstore healthcheck`.
// Each has its own option table and --help; `petstore keys` alone prints the usage of every keys
// command.
import process from 'node:process';
import { KeysFileError } from '../keys/file.ts';
import { BACKUP, RESTORE } from './backup.ts';
import { HEALTHCHECK } from './healthcheck.ts';
import { DURATION_NOTE, FILE_NOTES, WHEN_NOTE } from './key-options.ts';
import { KEYS_ADD } from './keys-add.ts';
import { KEYS_AUDIT } from './keys-audit.ts';
import { KEYS_IMPORT } from './keys-import.ts';
import { KEYS_LIST } from './keys-list.ts';
import { KEYS_REVOKE } from './keys-revoke.ts';
import { KEYS_ROTATE } from './keys-rotate.ts';
import { MIGRATE_STATUS, MIGRATE_UP } from './migrate.ts';
import { ConfigError, type Env, type Subcommand, usage } from './options.ts';

const KEYS_COMMANDS: Readonly<Record<string, Subcommand>> = {
  add: KEYS_ADD,
  rotate: KEYS_ROTATE,
  revoke: KEYS_REVOKE,
  list: KEYS_LIST,
  audit: KEYS_AUDIT,
  import: KEYS_IMPORT,
};

/** Width of the command names in the keys usage, so their options line up. */
const KEYS_NAME_WIDTH = 'petstore keys rotate'.length;

/**
 * `petstore keys`, `petstore keys --help`: the usage of every keys command.
 *
 * @example
 * keysHelp() // 'Usage:\n  petstore keys add    --keys FILE --consumer NAME [--plan PLAN] …'
 */
export function keysHelp(): string {
  const lines = Object.values(KEYS_COMMANDS).map(({ command }) =>
    usage(command, `  ${`petstore ${command.name}`.padEnd(KEYS_NAME_WIDTH)}`),
  );
  return [
    'Usage:',
    ...lines,
    '  petstore keys COMMAND --help   the options of one, with their defaults',
    '',
    'add and rotate print the new token alone on stdout (shown once) and its key id on stderr.',
    WHEN_NOTE,
    DURATION_NOTE,
    FILE_NOTES,
    '',
  ].join('\n');
}

/**
 * Every subcommand by its first word: what `runCli` runs, and how `main.ts` tells a subcommand
 * from a server start.
 */
const COMMANDS: Readonly<Record<string, (rest: readonly string[], env: Env, now: number) => Promise<number>>> = {
  keys: runKeys,
  healthcheck: (rest, env, now) => run(HEALTHCHECK, rest, env, now),
  backup: (rest, env, now) => run(BACKUP, rest, env, now),
  restore: (rest, env, now) => run(RESTORE, rest, env, now),
  migrate: ([sub, ...rest], env, now) => {
    const migrate = sub === 'status' ? MIGRATE_STATUS : sub === 'up' ? MIGRATE_UP : undefined;
    if (!migrate) throw new ConfigError(`unknown command "migrate ${sub ?? ''}"; expected status or up`);
    return run(migrate, rest, env, now);
  },
};

/**
 * Whether `word` (argv's first) names a subcommand rather than a server option.
 *
 * @example
 * isCommand('keys') // true
 * isCommand('--port') // false
 */
export function isCommand(word: string | undefined): boolean {
  return word !== undefined && Object.hasOwn(COMMANDS, word);
}

/**
 * Runs the subcommand that `argv` names; resolves to its exit code. Bad usage throws
 * `ConfigError` (naming the command whose --help to read), a bad keys file `KeysFileError`.
 *
 * @example
 * process.exitCode = await runCli(['keys', 'list', '--keys', 'keys.json'])
 */
export async function runCli(argv: readonly string[], env: Env = process.env, now = Date.now()): Promise<number> {
  const [command = '', ...rest] = argv;
  const runCommand = isCommand(command) ? COMMANDS[command] : undefined;
  if (!runCommand) throw new ConfigError(`unknown command "${command}"`);
  return runCommand(rest, env, now);
}

/** `petstore keys …`: one keys command, or the usage of them all. */
function runKeys([sub, ...rest]: readonly string[], env: Env, now: number): Promise<number> {
  if (sub === undefined || sub === 'help' || sub === '--help') {
    process.stdout.write(keysHelp());
    return Promise.resolve(sub === undefined ? 2 : 0);
  }
  const keys = Object.hasOwn(KEYS_COMMANDS, sub) ? KEYS_COMMANDS[sub] : undefined;
  if (!keys) {
    throw new ConfigError(`unknown command "keys ${sub}"; expected ${Object.keys(KEYS_COMMANDS).join(', ')}`, 'keys');
  }
  return run(keys, rest, env, now);
}

/**
 * Runs one subcommand. Bad usage is rethrown naming it, for the --help hint; a bad keys file is
 * rethrown as it is. Any other failure (a held lock, a full disk) prints its message and exits 1.
 */
async function run(sub: Subcommand, argv: readonly string[], env: Env, now: number): Promise<number> {
  try {
    return await sub.run(argv, env, now);
  } catch (err) {
    if (err instanceof ConfigError && !err.command) throw new ConfigError(err.message, sub.command.name);
    if (err instanceof ConfigError || err instanceof KeysFileError) throw err;
    process.stderr.write(`petstore ${sub.command.name}: ${(err as Error).message}\n`);
    return 1;
  }
}
